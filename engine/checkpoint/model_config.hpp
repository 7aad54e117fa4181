#pragma once
// The architecture of a Llama-family checkpoint (Llama, Qwen2, Qwen3), read from a Hugging
// Face config.json.
// A plain value: immutable after parsing, safe to share between threads.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

// Llama 3.x "llama3" RoPE frequency scaling (the only rope_scaling specd supports).
struct RopeScaling {
  std::string rope_type;
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // architectures[0]: LlamaForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM
  std::string model_type;    // "llama", "qwen2" or "qwen3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t head_dim = 0;             // defaults to hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;  // null, absent or "default" -> nullopt
  bool tie_word_embeddings = false;
  std::string hidden_act = "silu";
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // eos_token_id: int or array
  std::string torch_dtype;             // informational
  // What Qwen adds to the Llama layer; both follow from the architecture.
  bool qkv_bias = false;  // Qwen2: biases on the q, k and v projections
  bool qk_norm = false;   // Qwen3: RMSNorm (weights of head_dim) on each q and k head before RoPE
};

// The model_type of each architecture specd runs, or nullptr.
const char* model_type_of(std::string_view architecture);

// Parses and validates config.json text; source_name (usually the path) goes into
// every error message. Throws SpecdError (malformed_json, missing_field, bad_value,
// unsupported_architecture). Unknown fields are ignored.
ModelConfig parse_model_config(std::string_view json_text, const std::string& source_name);

// Reads and parses a config.json file; a missing or unreadable file is missing_file.
ModelConfig load_model_config(const std::filesystem::path& config_json_path);

// Pretty-printed, HF-compatible config.json text (keys sorted as transformers writes them).
std::string model_config_to_json(const ModelConfig& config);

}  // namespace specd
