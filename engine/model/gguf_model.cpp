#include "engine/model/gguf_model.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"

namespace specd {

namespace {

using kernels::Dtype;

constexpr const char* kRopeFreqs = "rope_freqs.weight";

// GGUF stores these as f32; the shortest decimal that reads back as that float is what
// the HF config said (1e-05, not 9.99999974737875e-06).
double shortest_decimal(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  if (ec != std::errc()) return v;
  double out = v;
  std::from_chars(buf, end, out);
  return out;
}

[[noreturn]] void fail(ErrorCode code, const GgufFile& file, const std::string& problem) {
  throw SpecdError(code, file.path().string() + ": " + problem);
}

int64_t positive(const GgufFile& file, const std::string& key, std::optional<uint64_t> fallback = std::nullopt) {
  const std::optional<uint64_t> v = file.uint_value(key, fallback);
  if (!v) (void)file.uint_value(key);  // throws missing_field naming the key
  if (*v == 0 || *v > (uint64_t(1) << 40))
    fail(ErrorCode::bad_value, file, "metadata key '" + key + "' is " + std::to_string(*v));
  return static_cast<int64_t>(*v);
}

// convert_hf_to_gguf.py writes llama3 rope scaling as a tensor of per-frequency divisors,
// not as parameters. Accept it when it is the llama3 blend with Llama 3.1's parameters
// (low 1, high 4, 8192 original positions) and its largest divisor as the factor.
std::optional<RopeScaling> llama3_rope_from_freqs(const GgufFile& file, const ModelConfig& c) {
  const GgufTensor* t = file.find_tensor(kRopeFreqs);
  if (!t) return std::nullopt;
  const int64_t half = c.head_dim / 2;
  if (t->type != 0 || t->elements() != half)
    fail(ErrorCode::unsupported_architecture, file, std::string(kRopeFreqs) + " must be F32 with head_dim / 2 values");
  std::vector<float> divisors(half);
  std::memcpy(divisors.data(), t->data, half * sizeof(float));
  RopeScaling s;
  s.rope_type = "llama3";
  s.factor = *std::max_element(divisors.begin(), divisors.end());
  ModelConfig plain = c, scaled = c;
  scaled.rope_scaling = s;
  const at::Tensor base = rope_inverse_frequencies(plain), blended = rope_inverse_frequencies(scaled);
  for (int64_t i = 0; i < half; ++i) {
    const double expected = base[i].item<double>() / blended[i].item<double>();
    if (std::abs(divisors[i] - expected) > 1e-3 * expected)
      fail(ErrorCode::unsupported_architecture, file,
           std::string(kRopeFreqs) +
               " is not llama3 rope scaling with low 1, high 4, 8192 original positions; "
               "specd supports only that");
  }
  return s;
}

// `a` is the architecture's key prefix ("llama.", "qwen2.", "qwen3.").
void read_rope(const GgufFile& file, const std::string& a, ModelConfig& c) {
  c.rope_theta = shortest_decimal(file.float_value(a + "rope.freq_base", 10000.0).value());
  if (positive(file, a + "rope.dimension_count", uint64_t(c.head_dim)) != c.head_dim)
    fail(ErrorCode::unsupported_architecture, file,
         a + "rope.dimension_count differs from the head size " + std::to_string(c.head_dim) +
             "; specd rotates whole heads");
  const std::string type = file.string_value(a + "rope.scaling.type", "none").value();
  if (type != "none" || file.float_value(a + "rope.scaling.factor", 1.0).value() != 1.0)
    fail(ErrorCode::unsupported_architecture, file,
         a + "rope.scaling.type is '" + type + "'; specd supports only none (or llama3 via " + kRopeFreqs + ")");
  c.rope_scaling = llama3_rope_from_freqs(file, c);
}

std::vector<int32_t> special_ids(const GgufFile& file, std::initializer_list<const char*> keys) {
  std::vector<int32_t> ids;
  for (const char* key : keys) {
    if (auto id = file.uint_value(key, std::nullopt); id && *id <= INT32_MAX) {
      if (std::find(ids.begin(), ids.end(), static_cast<int32_t>(*id)) == ids.end()) ids.push_back(int32_t(*id));
    }
  }
  return ids;
}

std::optional<Dtype> kernel_dtype(uint32_t ggml_type) {
  switch (static_cast<GgmlType>(ggml_type)) {
    case GgmlType::f32:
      return Dtype::f32;
    case GgmlType::f16:
      return Dtype::f16;
    case GgmlType::bf16:
      return Dtype::bf16;
    case GgmlType::q8_0:
      return Dtype::q8_0;
    case GgmlType::q4_0:
      return Dtype::q4_0;
    case GgmlType::q4_1:
      return Dtype::q4_1;
    case GgmlType::q5_0:
      return Dtype::q5_0;
    case GgmlType::q5_1:
      return Dtype::q5_1;
    case GgmlType::q4_k:
      return Dtype::q4_k;
    case GgmlType::q5_k:
      return Dtype::q5_k;
    case GgmlType::q6_k:
      return Dtype::q6_k;
    default:
      return std::nullopt;
  }
}

// convert_hf_to_gguf.py permutes q and k rows for llama.cpp's interleaved-pair RoPE:
// within each head, GGUF row 2j + a holds HF row a * head_dim / 2 + j. Rows move whole, so
// this holds for block-quantized rows too.
void unpermute_rows(const std::byte* gguf, std::byte* hf, int64_t rows, int64_t head_dim, size_t row_size) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < rows / head_dim; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t a = 0; a < 2; ++a) {
        const int64_t from = h * head_dim + 2 * j + a, to = h * head_dim + a * half + j;
        std::memcpy(hf + to * row_size, gguf + from * row_size, row_size);
      }
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Hands the packer each tensor it asks for by HF name, checked and un-permuted. Every type
// llama-quantize's Q4_0, Q4_K_M, Q5_K_M and Q6_K presets write runs as stored (a tied
// embedding kept at Q6_K too); Q2_K, Q3_K and the IQ types are refused: they have no kernel.
class GgufTensorSource {
 public:
  GgufTensorSource(const GgufFile& file, const ModelConfig& c, LoadProgress& progress)
      : file_(file), config_(c), progress_(progress) {}

  RawTensor operator()(const std::string& hf_name, const std::vector<int64_t>& shape) {
    if (previous_) file_.release(*previous_);
    const std::optional<std::string> name = gguf_tensor_name(hf_name);
    const GgufTensor* t = name ? file_.find_tensor(*name) : nullptr;
    if (!t)
      fail(ErrorCode::missing_tensor, file_, "tensor " + name.value_or(hf_name) + " (" + hf_name + ") is missing");
    used_.insert(t->name);
    check_shape(*t, shape);
    const std::optional<Dtype> dtype = kernel_dtype(t->type);
    if (!dtype)
      fail(ErrorCode::unsupported_dtype, file_,
           "tensor " + t->name + " is " + ggml_type_name(t->type) +
               "; specd loads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K tensors (Q2_K, Q3_K "
               "and the IQ types have no kernel: choose a Q4_K_M or larger preset)");
    previous_ = t;
    progress_.advance(t->nbytes);
    // Only the llama architecture's q and k are permuted: llama.cpp runs Qwen's RoPE on
    // rotate-half pairs (NEOX), as HF does.
    const bool q = name->ends_with("attn_q.weight"), k = name->ends_with("attn_k.weight");
    if ((!q && !k) || config_.model_type != "llama") return RawTensor{t->data, *dtype, true};
    scratch_.resize(t->nbytes);
    unpermute_rows(t->data, scratch_.data(), shape[0], config_.head_dim, kernels::stored_row_bytes(*dtype, shape[1]));
    return RawTensor{scratch_.data(), *dtype};
  }

  // A tensor nobody asked for (a bias, another architecture's part) would be ignored
  // silently, changing the model: refuse it.
  void check_all_used() const {
    if (previous_) file_.release(*previous_);
    for (const GgufTensor& t : file_.tensors())
      if (!used_.count(t.name) && t.name != kRopeFreqs)
        fail(ErrorCode::unsupported_architecture, file_,
             "tensor " + t.name + " is not part of a " + config_.model_type + " model specd runs");
  }

 private:
  void check_shape(const GgufTensor& t, const std::vector<int64_t>& shape) const {
    // GGUF lists ne[0] (the input, innermost dimension) first: HF's shape reversed.
    const std::vector<int64_t> expected(shape.rbegin(), shape.rend());
    if (t.dims != expected)
      fail(ErrorCode::shape_mismatch, file_,
           "tensor " + t.name + " has dims " + dims_text(t.dims) + ", the config needs " + dims_text(expected) +
               " (ne[0] first)");
  }

  const GgufFile& file_;
  const ModelConfig& config_;
  LoadProgress& progress_;
  const GgufTensor* previous_ = nullptr;
  std::vector<std::byte> scratch_;
  std::set<std::string> used_;
};

}  // namespace

ModelConfig gguf_model_config(const GgufFile& file) {
  const std::string arch = file.string_value("general.architecture");
  ModelConfig c;
  if (arch == "llama") {
    c.architecture = "LlamaForCausalLM";
  } else if (arch == "qwen2") {
    c.architecture = "Qwen2ForCausalLM", c.qkv_bias = true;
  } else if (arch == "qwen3") {
    c.architecture = "Qwen3ForCausalLM", c.qk_norm = true;
  } else {
    fail(ErrorCode::unsupported_architecture, file,
         "general.architecture is '" + arch + "'; specd supports 'llama', 'qwen2' and 'qwen3'");
  }
  c.model_type = arch;
  const std::string a = arch + ".";
  c.hidden_size = positive(file, a + "embedding_length");
  c.intermediate_size = positive(file, a + "feed_forward_length");
  c.num_hidden_layers = positive(file, a + "block_count");
  c.num_attention_heads = positive(file, a + "attention.head_count");
  c.num_key_value_heads = positive(file, a + "attention.head_count_kv", uint64_t(c.num_attention_heads));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail(ErrorCode::bad_value, file, a + "attention.head_count_kv must divide " + a + "attention.head_count");
  c.head_dim = positive(file, a + "attention.key_length", uint64_t(c.hidden_size / c.num_attention_heads));
  if (positive(file, a + "attention.value_length", uint64_t(c.head_dim)) != c.head_dim)
    fail(ErrorCode::unsupported_architecture, file, a + "attention.value_length differs from key_length");
  c.max_position_embeddings = positive(file, a + "context_length", 2048);
  c.rms_norm_eps = shortest_decimal(file.float_value(a + "attention.layer_norm_rms_epsilon", 1e-5).value());
  read_rope(file, a, c);
  if (file.find("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int64_t>(file.strings("tokenizer.ggml.tokens").size());
  } else if (const GgufTensor* embd = file.find_tensor("token_embd.weight"); embd && embd->dims.size() == 2) {
    c.vocab_size = embd->dims[1];
  } else {
    c.vocab_size = positive(file, a + "vocab_size");
  }
  c.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
  if (auto bos = special_ids(file, {"tokenizer.ggml.bos_token_id"}); !bos.empty()) c.bos_token_id = bos[0];
  c.eos_token_ids =
      special_ids(file, {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"});
  return c;
}

std::optional<std::string> gguf_tensor_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return std::nullopt;
  const size_t dot = hf.find('.', kLayers.size());
  if (dot == std::string::npos) return std::nullopt;
  const std::string layer = hf.substr(kLayers.size(), dot - kLayers.size());
  const std::string part = hf.substr(dot + 1);
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm.weight", "attn_norm.weight"},    {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},       {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},          {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"},
  };
  for (const auto& [from, to] : kParts)
    if (part == from) return "blk." + layer + "." + to;
  return std::nullopt;
}

std::shared_ptr<LlamaModel> load_gguf_model(const std::filesystem::path& path, WeightFormat format, LoadInfo* info) {
  const auto t0 = std::chrono::steady_clock::now();
  const GgufFile file = GgufFile::open(path);
  const ModelConfig config = gguf_model_config(file);
  auto model = std::make_shared<LlamaModel>(config, false);
  LoadProgress progress("loading " + path.filename().string(), file.file_bytes());
  GgufTensorSource source(file, config, progress);
  auto weights = std::make_shared<InferenceWeights>(pack_inference_weights(
      config, [&](const std::string& name, const std::vector<int64_t>& shape) { return source(name, shape); }, format));
  source.check_all_used();
  model->use_inference_weights(std::move(weights));
  progress.finish();
  if (info) {
    info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    info->file_bytes = file.file_bytes();
    info->shard_count = 1;
  }
  return model;
}

}  // namespace specd
