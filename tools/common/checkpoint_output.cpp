#include "tools/common/checkpoint_output.hpp"

#include "engine/base/errors.hpp"

namespace specd {

namespace fs = std::filesystem;

std::vector<TensorSpec> llama_tensor_specs(const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  std::vector<TensorSpec> specs{{"model.embed_tokens.weight", {c.vocab_size, h}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    specs.push_back({p + "input_layernorm.weight", {h}});
    specs.push_back({p + "mlp.down_proj.weight", {h, c.intermediate_size}});
    specs.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, h}});
    specs.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, h}});
    specs.push_back({p + "post_attention_layernorm.weight", {h}});
    if (c.qk_norm) specs.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    if (c.qkv_bias) specs.push_back({p + "self_attn.k_proj.bias", {kv}});
    specs.push_back({p + "self_attn.k_proj.weight", {kv, h}});
    specs.push_back({p + "self_attn.o_proj.weight", {h, q}});
    if (c.qk_norm) specs.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
    if (c.qkv_bias) specs.push_back({p + "self_attn.q_proj.bias", {q}});
    specs.push_back({p + "self_attn.q_proj.weight", {q, h}});
    if (c.qkv_bias) specs.push_back({p + "self_attn.v_proj.bias", {kv}});
    specs.push_back({p + "self_attn.v_proj.weight", {kv, h}});
  }
  if (!c.tie_word_embeddings) specs.push_back({"lm_head.weight", {c.vocab_size, h}});
  specs.push_back({"model.norm.weight", {h}});
  return specs;
}

ParameterCount count_parameters(const ModelConfig& config) {
  ParameterCount count;
  for (const auto& s : llama_tensor_specs(config)) {
    count.total += s.numel();
    if (s.name != "model.embed_tokens.weight" && s.name != "lm_head.weight") count.non_embedding += s.numel();
  }
  return count;
}

int copy_tokenizer_files(const fs::path& from, const fs::path& to) {
  if (!fs::exists(from / "tokenizer.json") && !fs::exists(from / "tokenizer.model"))
    throw SpecdError(ErrorCode::missing_file, from.string() + " holds neither tokenizer.json nor tokenizer.model");
  int copied = 0;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"}) {
    if (!fs::exists(from / name)) continue;
    fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing);
    ++copied;
  }
  return copied;
}

fs::path output_dir_outside(const std::string& out, const fs::path& source_tree) {
  const fs::path dir = fs::absolute(out);
  const auto rel = fs::weakly_canonical(dir).lexically_relative(fs::weakly_canonical(source_tree));
  if (!rel.empty() && *rel.begin() != "..")
    throw SpecdError(ErrorCode::invalid_argument, dir.string() + " is inside the source tree; write to /tmp");
  return dir;
}

}  // namespace specd
