#pragma once
// What the checkpoint-writing tools (specd_make_synthetic, specd_pad_model) share: the
// Hugging Face tensor layout of a Llama (or Qwen) model, the tokenizer files a model directory
// carries, and the rule that large generated checkpoints stay out of the source tree.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/sharded_writer.hpp"

namespace specd {

// Hugging Face names and shapes in the order of the model (tied: no lm_head), with
// Qwen2's q/k/v biases and Qwen3's q/k norms where the config has them.
std::vector<TensorSpec> llama_tensor_specs(const ModelConfig& config);

struct ParameterCount {
  int64_t total = 0;
  int64_t non_embedding = 0;  // without embed_tokens and lm_head, as HF's exclude_embeddings
};
ParameterCount count_parameters(const ModelConfig& config);

// Copies tokenizer.json, tokenizer_config.json, special_tokens_map.json and
// tokenizer.model where present; returns how many. Throws SpecdError(missing_file) when
// `from` holds neither tokenizer.json nor tokenizer.model.
int copy_tokenizer_files(const std::filesystem::path& from, const std::filesystem::path& to);

// The absolute output directory; throws SpecdError(invalid_argument) when it lies inside
// source_tree (multi-GB checkpoints must never be committed).
std::filesystem::path output_dir_outside(const std::string& out, const std::filesystem::path& source_tree);

}  // namespace specd
