#include "engine/model/llama_model.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/activation.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/kv_tables.hpp"
#include "engine/model/native_forward.hpp"

namespace specd {

namespace {

std::shared_ptr<Projection> make_linear(int64_t in, int64_t out) { return std::make_shared<Projection>(in, out); }

at::Tensor rotate_half(const at::Tensor& x) {
  int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

}  // namespace

// What every layer of one forward_full call shares.
struct LlamaModel::Step {
  at::Tensor cos, sin;  // [B, 1, T, head_dim]
  at::Tensor mask;      // additive [1, 1, 1, T, T]
};

Projection::Projection(int64_t in, int64_t out, bool with_bias) {
  weight = register_parameter("weight", at::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", at::zeros({out}));
}

at::Tensor Projection::forward(const at::Tensor& x) const { return at::linear(x, weight, bias); }

RmsNorm::RmsNorm(int64_t dim, double eps_) : eps(eps_) { weight = register_parameter("weight", at::ones({dim})); }

at::Tensor RmsNorm::forward(const at::Tensor& x) const { return x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * weight; }

Attention::Attention(const ModelConfig& c) {
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  q_proj = register_module("q_proj", std::make_shared<Projection>(c.hidden_size, q, c.qkv_bias));
  k_proj = register_module("k_proj", std::make_shared<Projection>(c.hidden_size, kv, c.qkv_bias));
  v_proj = register_module("v_proj", std::make_shared<Projection>(c.hidden_size, kv, c.qkv_bias));
  o_proj = register_module("o_proj", make_linear(q, c.hidden_size));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<RmsNorm>(c.head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<RmsNorm>(c.head_dim, c.rms_norm_eps));
  }
}

Mlp::Mlp(const ModelConfig& c) {
  gate_proj = register_module("gate_proj", make_linear(c.hidden_size, c.intermediate_size));
  up_proj = register_module("up_proj", make_linear(c.hidden_size, c.intermediate_size));
  down_proj = register_module("down_proj", make_linear(c.intermediate_size, c.hidden_size));
}

at::Tensor Mlp::forward(const at::Tensor& x) {
  return down_proj->forward(at::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

DecoderLayer::DecoderLayer(const ModelConfig& c) {
  self_attn = register_module("self_attn", std::make_shared<Attention>(c));
  mlp = register_module("mlp", std::make_shared<Mlp>(c));
  input_layernorm = register_module("input_layernorm", std::make_shared<RmsNorm>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<RmsNorm>(c.hidden_size, c.rms_norm_eps));
}

LlamaBody::LlamaBody(const ModelConfig& c) {
  // An explicit weight skips Embedding's random init (seconds at 128K x 3072).
  embed_tokens = register_module(
      "embed_tokens",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size)._weight(at::empty({c.vocab_size, c.hidden_size}))));
  torch::nn::ModuleList list;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(std::make_shared<DecoderLayer>(c));
    list->push_back(layers.back());
  }
  register_module("layers", list);
  norm = register_module("norm", std::make_shared<RmsNorm>(c.hidden_size, c.rms_norm_eps));
}

at::Tensor rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t half = config.head_dim / 2;
  std::vector<double> inv(half);
  for (int64_t i = 0; i < half; ++i) {
    inv[i] = 1.0 / std::pow(config.rope_theta, static_cast<double>(2 * i) / static_cast<double>(config.head_dim));
  }
  if (config.rope_scaling) {
    // Llama 3.1+ "llama3" scaling: long wavelengths divided by factor, short ones kept,
    // a smooth blend in between (HF transformers _compute_llama3_parameters).
    const RopeScaling& s = *config.rope_scaling;
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_len / s.low_freq_factor;
    const double high_wavelen = old_len / s.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f = f / s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  return at::tensor(inv, at::kDouble).to(at::kFloat);
}

LlamaModel::LlamaModel(const ModelConfig& config, bool with_parameters) : config_(config) {
  if (config.head_dim % 2 != 0) {
    throw SpecdError(ErrorCode::unsupported_architecture, "head_dim must be even for RoPE");
  }
  if (with_parameters) {
    model_ = register_module("model", std::make_shared<LlamaBody>(config));
    if (!config.tie_word_embeddings) {
      lm_head_ = register_module("lm_head", make_linear(config.hidden_size, config.vocab_size));
    }
  }
  inv_freq_ = rope_inverse_frequencies(config);
}

LlamaModel::~LlamaModel() = default;

int64_t LlamaModel::parameter_count() const {
  if (!model_) return runner_ ? runner_->weights().parameter_count() : 0;
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void LlamaModel::use_inference_weights(std::shared_ptr<const InferenceWeights> weights) {
  runner_ = std::make_unique<ForwardRunner>(std::move(weights));
}

const InferenceWeights* LlamaModel::inference_weights() const { return runner_ ? &runner_->weights() : nullptr; }

ForwardRunner& LlamaModel::runner() {
  if (!runner_) pack_parameters_for_inference();
  return *runner_;
}

void LlamaModel::pack_parameters_for_inference() {
  if (!model_) throw SpecdError(ErrorCode::invalid_argument, "the model has no float32 parameters to pack");
  torch::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> params;
  for (const auto& item : named_parameters()) params[item.key()] = item.value().detach().contiguous();
  auto source = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const at::Tensor& t = params.at(name);
    if (t.sizes() != at::IntArrayRef(shape)) {
      throw SpecdError(ErrorCode::shape_mismatch, "parameter " + name + " does not have the config's shape");
    }
    return RawTensor{t.data_ptr<float>(), kernels::Dtype::f32};
  };
  use_inference_weights(std::make_shared<InferenceWeights>(pack_inference_weights(config_, source)));
}

at::Tensor LlamaModel::logits_from_hidden(const at::Tensor& hidden) {
  if (lm_head_) return lm_head_->forward(hidden);
  return at::linear(hidden, model_->embed_tokens->weight);
}

at::Tensor LlamaModel::attention(int32_t layer, const at::Tensor& x, const Step& step) {
  auto& attn = *model_->layers[layer]->self_attn;
  const int64_t B = x.size(0), T = x.size(1), D = config_.head_dim;
  const int64_t H = config_.num_attention_heads, KV = config_.num_key_value_heads;
  at::Tensor q = attn.q_proj->forward(x).view({B, T, H, D});
  at::Tensor k = attn.k_proj->forward(x).view({B, T, KV, D});
  if (attn.q_norm) q = attn.q_norm->forward(q), k = attn.k_norm->forward(k);
  q = apply_rope(q.transpose(1, 2), step.cos, step.sin);
  k = apply_rope(k.transpose(1, 2), step.cos, step.sin);
  at::Tensor v = attn.v_proj->forward(x).view({B, T, KV, D}).transpose(1, 2);
  // Grouped-query attention without repeating K/V: query heads that share a KV head
  // are folded into the row dimension (HF maps query head h to KV head h / group).
  const int64_t group = H / KV;
  at::Tensor scores = at::matmul(q.reshape({B, KV, group * T, D}), k.transpose(-1, -2));
  scores = scores * (1.0 / std::sqrt(static_cast<double>(D)));
  scores = (scores.view({B, KV, group, T, T}) + step.mask).view({B, KV, group * T, T});
  at::Tensor out = at::matmul(at::softmax(scores, -1), v);
  return attn.o_proj->forward(out.view({B, H, T, D}).transpose(1, 2).reshape({B, T, H * D}));
}

at::Tensor LlamaModel::run_layers(at::Tensor x, const Step& step) {
  for (int32_t i = 0; i < static_cast<int32_t>(model_->layers.size()); ++i) {
    const auto& layer = *model_->layers[i];
    x = x + attention(i, layer.input_layernorm->forward(x), step);
    x = x + layer.mlp->forward(layer.post_attention_layernorm->forward(x));
  }
  return model_->norm->forward(x);
}

namespace {

// cos/sin of RoPE for integer positions [B, T] -> two [B, 1, T, head_dim] tensors.
std::pair<at::Tensor, at::Tensor> rope_cos_sin(const at::Tensor& positions, const at::Tensor& inv_freq) {
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq;
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);
  return {emb.cos(), emb.sin()};
}

at::Tensor additive_mask(const at::Tensor& allowed) {
  return at::zeros(allowed.sizes(), at::kFloat).masked_fill(allowed.logical_not(), -INFINITY);
}

}  // namespace

at::Tensor LlamaModel::forward_full(const at::Tensor& tokens) {
  if (!model_) {
    throw SpecdError(ErrorCode::invalid_argument,
                     "forward_full needs float32 parameters; this model was loaded for inference");
  }
  const int64_t B = tokens.size(0), T = tokens.size(1);
  Step step;
  at::Tensor positions = at::arange(T, at::kLong).unsqueeze(0).expand({B, T});
  std::tie(step.cos, step.sin) = rope_cos_sin(positions, inv_freq_);
  at::Tensor pos = at::arange(T, at::kLong);
  step.mask = additive_mask(pos.view({1, T}) <= pos.view({T, 1})).view({1, 1, 1, T, T});
  return logits_from_hidden(run_layers(model_->embed_tokens(tokens), step));
}

at::Tensor LlamaModel::forward(const ForwardBatch& batch, KvCache& cache, LogitsFor which) {
  const int64_t B = batch.tokens.size(0), T = batch.tokens.size(1), V = config_.vocab_size;
  if (static_cast<int64_t>(batch.slots.size()) != B || static_cast<int64_t>(batch.lengths.size()) != B) {
    throw SpecdError(ErrorCode::invalid_argument, "forward: slots and lengths must have one entry per row");
  }
  const at::Tensor tokens = batch.tokens.to(at::kInt).contiguous();
  const int32_t* ids = tokens.data_ptr<int32_t>();
  std::vector<ForwardSegment> segments;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.lengths[b];
    if (n < 1 || n > T) throw SpecdError(ErrorCode::invalid_argument, "forward: row length outside 1..T");
    segments.push_back({std::span<const int32_t>(ids + b * T, static_cast<size_t>(n)), batch.slots[b], which});
  }
  at::Tensor valid = forward(segments, cache);
  if (which == LogitsFor::last_position) return valid;
  at::Tensor logits = at::zeros({B, T, V}, at::kFloat);
  int64_t r = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.lengths[b];
    logits[b].narrow(0, 0, n).copy_(valid.narrow(0, r, n));
    r += n;
  }
  return logits;
}

namespace {

// The forward rows of a pass's segments: a chain's tokens after `length_of(slot)`.
template <class LengthOf>
void segment_rows(std::span<const ForwardSegment> segments, int64_t max_seq_len, LengthOf length_of,
                  std::vector<ForwardRow>& rows, std::vector<int64_t>& logit_rows) {
  for (const ForwardSegment& s : segments) {
    if (!s.tree.empty()) {
      for (const ForwardRow& row : s.tree) {
        logit_rows.push_back(static_cast<int64_t>(rows.size()));
        rows.push_back(row);
      }
      continue;
    }
    const int64_t start = length_of(s.slot), n = static_cast<int64_t>(s.tokens.size());
    if (n < 1) throw SpecdError(ErrorCode::invalid_argument, "forward: a segment without tokens");
    if (start + n > max_seq_len) {
      throw SpecdError(ErrorCode::out_of_capacity, "sequence of " + std::to_string(start + n) +
                                                       " tokens exceeds max_seq_len " + std::to_string(max_seq_len));
    }
    for (int64_t t = 0; t < n; ++t) {
      if (s.logits == LogitsFor::all_positions || t == n - 1) logit_rows.push_back(static_cast<int64_t>(rows.size()));
      rows.push_back({s.tokens[t], s.slot, start + t});
    }
  }
}

}  // namespace

at::Tensor LlamaModel::forward(std::span<const ForwardSegment> segments, KvCache& cache) {
  if (!runner_) pack_parameters_for_inference();
  std::vector<ForwardRow> rows;
  std::vector<int64_t> logit_rows;
  segment_rows(
      segments, cache.max_seq_len(), [&](int32_t slot) { return cache.length(slot); }, rows, logit_rows);
  at::Tensor logits = at::empty({static_cast<int64_t>(logit_rows.size()), config_.vocab_size}, at::kFloat);
  runner_->run(rows, cache, logit_rows, logits.data_ptr<float>());
  for (const ForwardSegment& s : segments) {
    if (s.tree.empty()) cache.set_length(s.slot, cache.length(s.slot) + s.tokens.size());
  }
  return logits;
}

at::Tensor LlamaModel::forward(std::span<const ForwardSegment> segments, const KvTables& tables, KvBlockPool& storage) {
  if (!runner_) pack_parameters_for_inference();
  std::vector<ForwardRow> rows;
  std::vector<int64_t> logit_rows;
  segment_rows(
      segments, tables.max_seq_len, [&](int32_t slot) { return tables.at(slot).length; }, rows, logit_rows);
  at::Tensor logits = at::empty({static_cast<int64_t>(logit_rows.size()), config_.vocab_size}, at::kFloat);
  runner_->run(rows, tables, storage, logit_rows, logits.data_ptr<float>());
  return logits;
}

}  // namespace specd
