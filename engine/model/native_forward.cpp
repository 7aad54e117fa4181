#include "engine/model/native_forward.hpp"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/kernels/linear.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"

namespace specd {

namespace {

constexpr int kLanes = 16;  // partial sums per reduction: vectorisable, and a fixed order

// Sum of a[i] * b[i] in kLanes interleaved partial sums, then a fixed tree: the same
// order for every call, and the compiler turns the lanes into SIMD registers.
float dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

// y = x * rsqrt(mean(x^2) + eps) * w over m rows of n.
void rms_norm(const float* x, const float* w, int64_t m, int64_t n, double eps, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    const float inv = 1.0f / std::sqrt(dot(xr, xr, n) / static_cast<float>(n) + static_cast<float>(eps));
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

void add_into(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

// HF's rotate_half convention: the two halves of a head rotate as pairs (i, i + D/2).
void rope(float* v, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float a = v[i], b = v[i + half];
    v[i] = a * cos[i] - b * sin[i];
    v[i + half] = b * cos[i] + a * sin[i];
  }
}

// One query head over keys 0..last of its slot: softmax(q.k / sqrt(D)) . v.
void attend_head(const float* q, const float* keys, const float* values, int64_t last, int64_t d, float* scores,
                 float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  float top = -INFINITY;
  for (int64_t j = 0; j <= last; ++j) {
    scores[j] = dot(q, keys + j * d, d) * scale;
    top = std::max(top, scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j <= last; ++j) {
    scores[j] = std::exp(scores[j] - top);
    sum += scores[j];
  }
  std::fill(out, out + d, 0.0f);
  for (int64_t j = 0; j <= last; ++j) {
    const float p = scores[j] / sum;
    const float* v = values + j * d;
    for (int64_t i = 0; i < d; ++i) out[i] += p * v[i];
  }
}

template <class T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

ForwardRunner::ForwardRunner(std::shared_ptr<const InferenceWeights> weights) : weights_(std::move(weights)) {
  const ModelConfig& c = weights_->config;
  const at::Tensor inv = rope_inverse_frequencies(c);
  inv_freq_.assign(inv.data_ptr<float>(), inv.data_ptr<float>() + inv.numel());
}

void ForwardRunner::ensure_rope(int64_t positions) {
  if (positions <= rope_positions_) return;
  const int64_t half = weights_->config.head_dim / 2;
  const int64_t n = std::max(positions, 2 * rope_positions_);  // amortised growth
  rope_cos_.resize(n * half);
  rope_sin_.resize(n * half);
  for (int64_t p = rope_positions_; p < n; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      // Float angle as libtorch's reference computes it, cos and sin in double.
      const float angle = static_cast<float>(p) * inv_freq_[i];
      rope_cos_[p * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      rope_sin_[p * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  rope_positions_ = n;
}

void ForwardRunner::check_rows(std::span<const ForwardRow> rows, const KvCache& cache) {
  const int64_t vocab = weights_->config.vocab_size;
  for (const ForwardRow& r : rows) {
    if (r.token < 0 || r.token >= vocab) {
      throw SpecdError(ErrorCode::invalid_argument,
                       "token id " + std::to_string(r.token) + " outside the vocabulary of " + std::to_string(vocab));
    }
    if (r.position < 0 || r.position >= cache.max_seq_len() || r.slot < 0 || r.slot >= cache.slot_count()) {
      throw SpecdError(ErrorCode::out_of_capacity, "position " + std::to_string(r.position) + " of slot " +
                                                       std::to_string(r.slot) + " is outside the KV cache");
    }
  }
}

void ForwardRunner::embed(std::span<const ForwardRow> rows) {
  const int64_t hidden = weights_->config.hidden_size;
  for (size_t r = 0; r < rows.size(); ++r) {
    float* x = s_.x.data() + r * hidden;
    for (int64_t i = 0; i < hidden; ++i) x[i] = weights_->embed.at(rows[r].token, i);
  }
}

void ForwardRunner::attend(std::span<const ForwardRow> rows, KvCache& cache, int64_t layer) {
  const ModelConfig& c = weights_->config;
  const int64_t d = c.head_dim, heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  const int64_t group = heads / kv_heads, qkv_width = (heads + 2 * kv_heads) * d, seq = cache.max_seq_len();
  const float* keys = cache.keys(static_cast<int32_t>(layer)).data_ptr<float>();
  const float* values = cache.values(static_cast<int32_t>(layer)).data_ptr<float>();
  const int64_t m = static_cast<int64_t>(rows.size());
  auto work = [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores;
    for (int64_t job = begin; job < end; ++job) {
      const int64_t r = job / heads, h = job % heads, kvh = h / group;
      const ForwardRow& row = rows[r];
      grow(scores, static_cast<size_t>(row.position + 1));
      const int64_t base = (static_cast<int64_t>(row.slot) * kv_heads + kvh) * seq * d;
      attend_head(s_.qkv.data() + r * qkv_width + h * d, keys + base, values + base, row.position, d, scores.data(),
                  s_.attn.data() + r * heads * d + h * d);
    }
  };
  int64_t keys_seen = 0;
  for (const ForwardRow& row : rows) keys_seen += row.position + 1;
  kernels::KernelThreads* threads = kernels::KernelThreads::current();
  // Waking the lane's workers costs microseconds: only worth it for long contexts.
  constexpr int64_t kParallelKeys = 4096;
  if (threads && threads->size() > 1 && keys_seen * heads >= kParallelKeys) {
    threads->parallel_for(m * heads, 1, work);
  } else {
    work(0, m * heads);
  }
}

void ForwardRunner::attention_block(int64_t layer, std::span<const ForwardRow> rows, KvCache& cache) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[layer];
  const int64_t m = static_cast<int64_t>(rows.size()), hidden = c.hidden_size, d = c.head_dim, half = d / 2;
  const int64_t heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  const int64_t qkv_width = (heads + 2 * kv_heads) * d, seq = cache.max_seq_len();
  rms_norm(s_.x.data(), w.input_norm.data(), m, hidden, c.rms_norm_eps, s_.h.data());
  kernels::linear(w.qkv, s_.h.data(), m, s_.qkv.data());
  float* cache_k = cache.keys(static_cast<int32_t>(layer)).data_ptr<float>();
  float* cache_v = cache.values(static_cast<int32_t>(layer)).data_ptr<float>();
  for (int64_t r = 0; r < m; ++r) {
    float* row = s_.qkv.data() + r * qkv_width;
    const float* cos = rope_cos_.data() + rows[r].position * half;
    const float* sin = rope_sin_.data() + rows[r].position * half;
    for (int64_t h = 0; h < heads + kv_heads; ++h) rope(row + h * d, cos, sin, half);  // queries and keys
    for (int64_t kvh = 0; kvh < kv_heads; ++kvh) {
      const int64_t at = ((static_cast<int64_t>(rows[r].slot) * kv_heads + kvh) * seq + rows[r].position) * d;
      std::copy_n(row + (heads + kvh) * d, d, cache_k + at);
      std::copy_n(row + (heads + kv_heads + kvh) * d, d, cache_v + at);
    }
  }
  attend(rows, cache, layer);
  kernels::linear(w.o, s_.attn.data(), m, s_.out.data());
  add_into(s_.x.data(), s_.out.data(), m * hidden);
}

void ForwardRunner::mlp_block(int64_t layer, int64_t m) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[layer];
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  rms_norm(s_.x.data(), w.post_attention_norm.data(), m, hidden, c.rms_norm_eps, s_.h.data());
  kernels::linear(w.gate_up, s_.h.data(), m, s_.mlp.data());
  for (int64_t r = 0; r < m; ++r) {  // silu(gate) * up, written over the gate half
    float* gate = s_.mlp.data() + r * 2 * inter;
    const float* up = gate + inter;
    for (int64_t i = 0; i < inter; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
  // down reads the gated rows with a stride of 2 * inter: pack them first.
  for (int64_t r = 1; r < m; ++r) std::copy_n(s_.mlp.data() + r * 2 * inter, inter, s_.mlp.data() + r * inter);
  kernels::linear(w.down, s_.mlp.data(), m, s_.out.data());
  add_into(s_.x.data(), s_.out.data(), m * hidden);
}

void ForwardRunner::run(std::span<const ForwardRow> rows, KvCache& cache, std::span<const int64_t> logit_rows,
                        float* logits) {
  const ModelConfig& c = weights_->config;
  check_rows(rows, cache);
  const int64_t m = static_cast<int64_t>(rows.size()), hidden = c.hidden_size, d = c.head_dim;
  const int64_t heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  int64_t last = 0;
  for (const ForwardRow& r : rows) last = std::max(last, r.position);
  ensure_rope(last + 1);
  grow(s_.x, m * hidden);
  grow(s_.h, m * hidden);
  grow(s_.qkv, m * (heads + 2 * kv_heads) * d);
  grow(s_.attn, m * heads * d);
  grow(s_.mlp, m * 2 * c.intermediate_size);
  grow(s_.out, m * hidden);
  embed(rows);
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    attention_block(layer, rows, cache);
    mlp_block(layer, m);
  }
  const int64_t n = static_cast<int64_t>(logit_rows.size());
  for (int64_t i = 0; i < n; ++i) {  // the final norm of the rows whose logits are wanted, gathered
    rms_norm(s_.x.data() + logit_rows[i] * hidden, weights_->final_norm.data(), 1, hidden, c.rms_norm_eps,
             s_.h.data() + i * hidden);
  }
  kernels::linear(weights_->head(), s_.h.data(), n, logits);
}

}  // namespace specd
