#pragma once
// Llama, Qwen2 and Qwen3 models from llama.cpp's GGUF files (as convert_hf_to_gguf.py and
// llama-quantize write them): the config from the `llama.*` (`qwen2.*`, `qwen3.*`)
// metadata, the tensors mapped onto the Hugging Face names the packer asks for, a llama
// file's attn_q/attn_k rows un-permuted back to HF's rotate-half layout. Tensors in F32,
// F16, BF16, Q8_0, Q4_0 and the nibble formats are packed as stored.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/model/weight_format.hpp"

namespace specd {

class GgufFile;
class LlamaModel;
struct LoadInfo;
struct ModelConfig;

// The config of a GGUF file: general.architecture must be llama, qwen2 or qwen3 (else
// unsupported_architecture naming it); missing or ill-typed keys are SpecdErrors naming
// the file and the key.
ModelConfig gguf_model_config(const GgufFile& file);

// The GGUF name of a Hugging Face tensor name ("model.layers.3.self_attn.q_proj.weight"
// -> "blk.3.attn_q.weight"); nullopt for names a Llama or Qwen GGUF does not hold.
std::optional<std::string> gguf_tensor_name(const std::string& hf_name);

// Loads a GGUF file for inference; `weights` quantizes its float tensors at load. Throws
// SpecdError: the reader's errors, missing_tensor, shape_mismatch, and unsupported_dtype
// naming the tensor and its type (Q4_K, ...) or a quantized tensor asked for another format.
std::shared_ptr<LlamaModel> load_gguf_model(const std::filesystem::path& file,
                                            WeightFormat weights = WeightFormat::stored, LoadInfo* info = nullptr);

}  // namespace specd
