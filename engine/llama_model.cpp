#include "engine/llama_model.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/activation.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "engine/errors.hpp"
#include "engine/kv_cache.hpp"

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

// What every layer of one forward call shares.
struct LlamaModel::Step {
  at::Tensor cos, sin;  // [B, 1, T, head_dim]
  at::Tensor mask;      // additive [B or 1, 1, 1, T, S], undefined when nothing is masked
  const ForwardBatch* batch = nullptr;  // null for forward_full
  KvCache* cache = nullptr;
  std::vector<int64_t> starts;  // each row's cache length before this call
  at::Tensor slot_index;        // [B] int64, for gathering cache rows
  int64_t key_len = 0;          // S: keys each query row may see, padded to the longest row
};

at::Tensor project(const at::Tensor& x, const at::Tensor& weight) {
  const int64_t in = x.size(-1), rows = x.numel() / std::max<int64_t>(in, 1);
  if (rows == 0 || rows > 3) return at::linear(x, weight);
  std::vector<int64_t> out_shape = x.sizes().vec();
  out_shape.back() = weight.size(0);
  at::Tensor flat = x.reshape({rows, in});
  if (rows == 1) return at::mv(weight, flat[0]).view(out_shape);
  std::vector<at::Tensor> outs;
  for (int64_t r = 0; r < rows; ++r) outs.push_back(at::mv(weight, flat[r]));
  return at::stack(outs).view(out_shape);
}

Projection::Projection(int64_t in, int64_t out) { weight = register_parameter("weight", at::empty({out, in})); }

at::Tensor Projection::forward(const at::Tensor& x) const { return project(x, weight); }

RmsNorm::RmsNorm(int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", at::ones({dim}));
}

at::Tensor RmsNorm::forward(const at::Tensor& x) const {
  return x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * weight;
}

Attention::Attention(const ModelConfig& c) {
  q_proj = register_module("q_proj", make_linear(c.hidden_size, c.num_attention_heads * c.head_dim));
  k_proj = register_module("k_proj", make_linear(c.hidden_size, c.num_key_value_heads * c.head_dim));
  v_proj = register_module("v_proj", make_linear(c.hidden_size, c.num_key_value_heads * c.head_dim));
  o_proj = register_module("o_proj", make_linear(c.num_attention_heads * c.head_dim, c.hidden_size));
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
      torch::nn::Embedding(torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size)
                               ._weight(at::empty({c.vocab_size, c.hidden_size}))));
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

LlamaModel::LlamaModel(const ModelConfig& config) : config_(config) {
  if (config.head_dim % 2 != 0) {
    throw SpecdError(ErrorCode::unsupported_architecture, "head_dim must be even for RoPE");
  }
  model_ = register_module("model", std::make_shared<LlamaBody>(config));
  if (!config.tie_word_embeddings) {
    lm_head_ = register_module("lm_head", make_linear(config.hidden_size, config.vocab_size));
  }
  inv_freq_ = rope_inverse_frequencies(config);
}

int64_t LlamaModel::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

at::Tensor LlamaModel::logits_from_hidden(const at::Tensor& hidden) {
  if (lm_head_) return lm_head_->forward(hidden);
  return project(hidden, model_->embed_tokens->weight);
}

void LlamaModel::fuse_projections() {
  torch::NoGradGuard no_grad;
  fused_qkv_.clear();
  fused_gate_up_.clear();
  // The separate parameters become views into the fused weights, so memory is not
  // doubled and the HF names still address the same numbers.
  auto fuse = [](std::vector<at::Tensor*> parts) {
    std::vector<at::Tensor> weights;
    for (auto* p : parts) weights.push_back(*p);
    at::Tensor fused = at::cat(weights, 0);
    int64_t row = 0;
    for (auto* p : parts) {
      const int64_t rows = p->size(0);
      p->set_data(fused.narrow(0, row, rows));
      row += rows;
    }
    return fused;
  };
  for (auto& layer : model_->layers) {
    auto& a = *layer->self_attn;
    fused_qkv_.push_back(fuse({&a.q_proj->weight, &a.k_proj->weight, &a.v_proj->weight}));
    fused_gate_up_.push_back(fuse({&layer->mlp->gate_proj->weight, &layer->mlp->up_proj->weight}));
  }
}

at::Tensor LlamaModel::attention(int32_t layer, const at::Tensor& x, const Step& step) {
  auto& attn = *model_->layers[layer]->self_attn;
  const int64_t B = x.size(0), T = x.size(1), D = config_.head_dim;
  const int64_t H = config_.num_attention_heads, KV = config_.num_key_value_heads;
  at::Tensor q, k, v;
  if (!fused_qkv_.empty()) {  // inference: one projection and one RoPE for q and k together
    at::Tensor qkv = project(x, fused_qkv_[layer]).view({B, T, H + 2 * KV, D});
    at::Tensor qk = apply_rope(qkv.narrow(2, 0, H + KV).transpose(1, 2), step.cos, step.sin);
    q = qk.narrow(1, 0, H);
    k = qk.narrow(1, H, KV);
    v = qkv.narrow(2, H + KV, KV).transpose(1, 2);
  } else {
    q = apply_rope(attn.q_proj->forward(x).view({B, T, H, D}).transpose(1, 2), step.cos, step.sin);
    k = apply_rope(attn.k_proj->forward(x).view({B, T, KV, D}).transpose(1, 2), step.cos, step.sin);
    v = attn.v_proj->forward(x).view({B, T, KV, D}).transpose(1, 2);
  }

  at::Tensor keys = k, values = v;
  if (step.cache) {
    at::Tensor& cache_k = step.cache->keys(layer);
    at::Tensor& cache_v = step.cache->values(layer);
    for (int64_t b = 0; b < B; ++b) {
      const int32_t slot = step.batch->slots[b];
      const int64_t n = step.batch->lengths[b];
      cache_k[slot].narrow(1, step.starts[b], n).copy_(k[b].narrow(1, 0, n));
      cache_v[slot].narrow(1, step.starts[b], n).copy_(v[b].narrow(1, 0, n));
    }
    if (B == 1) {  // a view, no gather copy, for the common single-sequence decode
      keys = cache_k[step.batch->slots[0]].narrow(1, 0, step.key_len).unsqueeze(0);
      values = cache_v[step.batch->slots[0]].narrow(1, 0, step.key_len).unsqueeze(0);
    } else {
      keys = cache_k.narrow(2, 0, step.key_len).index_select(0, step.slot_index);
      values = cache_v.narrow(2, 0, step.key_len).index_select(0, step.slot_index);
    }
  }
  // Grouped-query attention without repeating K/V: query heads that share a KV head
  // are folded into the row dimension (HF maps query head h to KV head h / group).
  const int64_t group = H / KV, S = keys.size(2);
  at::Tensor scores = at::matmul(q.reshape({B, KV, group * T, D}), keys.transpose(-1, -2));
  scores = scores * (1.0 / std::sqrt(static_cast<double>(D)));
  if (step.mask.defined()) scores = (scores.view({B, KV, group, T, S}) + step.mask).view({B, KV, group * T, S});
  at::Tensor out = at::matmul(at::softmax(scores, -1), values);
  return attn.o_proj->forward(out.view({B, H, T, D}).transpose(1, 2).reshape({B, T, H * D}));
}

at::Tensor LlamaModel::run_layers(at::Tensor x, const Step& step) {
  for (int32_t i = 0; i < static_cast<int32_t>(model_->layers.size()); ++i) {
    const auto& layer = *model_->layers[i];
    x = x + attention(i, layer.input_layernorm->forward(x), step);
    at::Tensor h = layer.post_attention_layernorm->forward(x);
    if (fused_gate_up_.empty()) {
      x = x + layer.mlp->forward(h);
    } else {
      const int64_t I = config_.intermediate_size;
      at::Tensor gate_up = project(h, fused_gate_up_[i]);
      x = x + layer.mlp->down_proj->forward(at::silu(gate_up.narrow(-1, 0, I)) * gate_up.narrow(-1, I, I));
    }
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
  const int64_t B = tokens.size(0), T = tokens.size(1);
  Step step;
  at::Tensor positions = at::arange(T, at::kLong).unsqueeze(0).expand({B, T});
  std::tie(step.cos, step.sin) = rope_cos_sin(positions, inv_freq_);
  at::Tensor pos = at::arange(T, at::kLong);
  step.mask = additive_mask(pos.view({1, T}) <= pos.view({T, 1})).view({1, 1, 1, T, T});
  return logits_from_hidden(run_layers(model_->embed_tokens(tokens), step));
}

at::Tensor LlamaModel::forward(const ForwardBatch& batch, KvCache& cache, LogitsFor which) {
  const int64_t B = batch.tokens.size(0), T = batch.tokens.size(1);
  if (static_cast<int64_t>(batch.slots.size()) != B || static_cast<int64_t>(batch.lengths.size()) != B) {
    throw SpecdError(ErrorCode::invalid_argument, "forward: slots and lengths must have one entry per row");
  }
  Step step;
  step.batch = &batch;
  step.cache = &cache;
  std::vector<int64_t> slot_ids(B);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = cache.length(batch.slots[b]), n = batch.lengths[b];
    if (n < 1 || n > T) throw SpecdError(ErrorCode::invalid_argument, "forward: row length outside 1..T");
    if (start + n > cache.max_seq_len()) {
      throw SpecdError(ErrorCode::out_of_capacity, "sequence of " + std::to_string(start + n) +
                                                       " tokens exceeds max_seq_len " +
                                                       std::to_string(cache.max_seq_len()));
    }
    step.starts.push_back(start);
    step.key_len = std::max(step.key_len, start + n);
    slot_ids[b] = batch.slots[b];
  }
  step.slot_index = at::tensor(slot_ids, at::kLong);
  at::Tensor positions = at::tensor(step.starts, at::kLong).unsqueeze(1) + at::arange(T, at::kLong).unsqueeze(0);
  std::tie(step.cos, step.sin) = rope_cos_sin(positions, inv_freq_);
  if (T > 1 || B > 1) {  // one row decoding one token sees every key: no mask needed
    at::Tensor key_pos = at::arange(step.key_len, at::kLong).view({1, 1, step.key_len});
    step.mask = additive_mask(key_pos <= positions.unsqueeze(-1)).view({B, 1, 1, T, step.key_len});
  }
  at::Tensor hidden = run_layers(model_->embed_tokens(batch.tokens), step);
  for (int64_t b = 0; b < B; ++b) cache.set_length(batch.slots[b], step.starts[b] + batch.lengths[b]);
  if (which == LogitsFor::all_positions) return logits_from_hidden(hidden);
  at::Tensor rows = at::arange(B, at::kLong) * T + at::tensor(batch.lengths, at::kLong) - 1;
  return logits_from_hidden(hidden.reshape({B * T, -1}).index_select(0, rows));
}

}  // namespace specd
