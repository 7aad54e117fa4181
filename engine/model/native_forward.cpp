#include "engine/model/native_forward.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/kernels/attention.hpp"
#include "engine/kernels/gating.hpp"
#include "engine/kernels/linear.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/kv_tables.hpp"
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

// Runs f, adding its wall seconds to `into` when profiling is on.
template <class F>
void timed(bool profiling, double& into, F&& f) {
  if (!profiling) return f();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  into += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

void ForwardRunner::check_rows(std::span<const ForwardRow> rows, const KvTables& tables) {
  const int64_t vocab = weights_->config.vocab_size;
  for (const ForwardRow& r : rows) {
    if (r.token < 0 || r.token >= vocab) {
      throw SpecdError(ErrorCode::invalid_argument,
                       "token id " + std::to_string(r.token) + " outside the vocabulary of " + std::to_string(vocab));
    }
    if (r.position < 0 || r.position >= tables.max_seq_len) {
      throw SpecdError(ErrorCode::out_of_capacity, "position " + std::to_string(r.position) + " of slot " +
                                                       std::to_string(r.slot) + " is outside the KV cache");
    }
    // Positions below the length may sit in blocks shared with the prefix cache (or
    // with a branch); at() also rejects a slot the tables lack.
    auto check_slot = [&](int32_t slot) {
      const SlotTable& t = tables.at(slot);
      if (r.position < t.length) {
        throw SpecdError(ErrorCode::invalid_argument, "position " + std::to_string(r.position) + " of slot " +
                                                          std::to_string(slot) + " is below its length " +
                                                          std::to_string(t.length));
      }
      if (r.position / tables.block_size >= static_cast<int64_t>(t.blocks.size())) {
        throw SpecdError(ErrorCode::invalid_argument, "position " + std::to_string(r.position) + " of slot " +
                                                          std::to_string(slot) + " is beyond its blocks");
      }
    };
    check_slot(r.slot);
    for (int32_t slot : r.also_write) check_slot(slot);
  }
}

void ForwardRunner::embed(std::span<const ForwardRow> rows) {
  const int64_t hidden = weights_->config.hidden_size;
  for (size_t r = 0; r < rows.size(); ++r) {
    float* x = s_.x.data() + r * hidden;
    for (int64_t i = 0; i < hidden; ++i) x[i] = weights_->embed.at(rows[r].token, i);
  }
}

void ForwardRunner::attend(std::span<const ForwardRow> rows, const KvTables& tables, const KvBlockPool& pool,
                           int64_t layer) {
  const ModelConfig& c = weights_->config;
  const int64_t d = c.head_dim, heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  const int64_t group = heads / kv_heads, qkv_width = (heads + 2 * kv_heads) * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t m = static_cast<int64_t>(rows.size());
  // One job per (row, KV head): its query heads share each block's keys and values.
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const int64_t r = job / kv_heads, kvh = job % kv_heads;
      const ForwardRow& row = rows[r];
      const kernels::PagedKv kv =
          pool.head(static_cast<int32_t>(layer), static_cast<int32_t>(kvh), tables.at(row.slot).blocks.data());
      kernels::attend(kv, row.position + 1, s_.qkv.data() + r * qkv_width + kvh * group * d,
                      static_cast<int32_t>(group), scale, s_.attn.data() + (r * heads + kvh * group) * d);
    }
  };
  int64_t keys_seen = 0;
  for (const ForwardRow& row : rows) keys_seen += row.position + 1;
  kernels::KernelThreads* threads = kernels::KernelThreads::current();
  // Waking the lane's workers costs microseconds: only worth it for long contexts.
  constexpr int64_t kParallelKeys = 4096;
  if (threads && threads->size() > 1 && keys_seen * heads >= kParallelKeys) {
    threads->parallel_for(m * kv_heads, 1, work);
  } else {
    work(0, m * kv_heads);
  }
}

void ForwardRunner::linear(const kernels::PackedWeight& w, const float* x, int64_t m, float* y) {
  timed(profiling_, profile_.linear, [&] { kernels::linear(w, x, m, y); });
}

void ForwardRunner::set_profiling(bool on) {
  if (on) profile_ = {};
  profiling_ = on;
}

void ForwardRunner::attention_block(int64_t layer, std::span<const ForwardRow> rows, const KvTables& tables,
                                    KvBlockPool& pool) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[layer];
  const int64_t m = static_cast<int64_t>(rows.size()), hidden = c.hidden_size, d = c.head_dim, half = d / 2;
  const int64_t heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  const int64_t qkv_width = (heads + 2 * kv_heads) * d;
  rms_norm(s_.x.data(), w.input_norm.data(), m, hidden, c.rms_norm_eps, s_.h.data());
  linear(w.qkv, s_.h.data(), m, s_.qkv.data());
  const int64_t block_size = tables.block_size;
  for (int64_t r = 0; r < m; ++r) {
    float* row = s_.qkv.data() + r * qkv_width;
    const ForwardRow& at = rows[r];
    // Qwen's additions, skipped for Llama: a layer without them has them empty.
    if (!w.qkv_bias.empty()) add_into(row, w.qkv_bias.data(), qkv_width);
    if (!w.q_norm.empty()) {
      rms_norm(row, w.q_norm.data(), heads, d, c.rms_norm_eps, row);
      rms_norm(row + heads * d, w.k_norm.data(), kv_heads, d, c.rms_norm_eps, row + heads * d);
    }
    const float* cos = rope_cos_.data() + at.position * half;
    const float* sin = rope_sin_.data() + at.position * half;
    for (int64_t h = 0; h < heads + kv_heads; ++h) rope(row + h * d, cos, sin, half);  // queries and keys
    auto write_into = [&](int32_t slot) {
      pool.write(static_cast<int32_t>(layer), tables.at(slot).blocks[at.position / block_size],
                 static_cast<int32_t>(at.position % block_size), row + heads * d, row + (heads + kv_heads) * d);
    };
    write_into(at.slot);
    for (int32_t slot : at.also_write) write_into(slot);
  }
  timed(profiling_, profile_.attention, [&] { attend(rows, tables, pool, layer); });
  linear(w.o, s_.attn.data(), m, s_.out.data());
  add_into(s_.x.data(), s_.out.data(), m * hidden);
}

void ForwardRunner::mlp_block(int64_t layer, int64_t m) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[layer];
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  rms_norm(s_.x.data(), w.post_attention_norm.data(), m, hidden, c.rms_norm_eps, s_.h.data());
  linear(w.gate_up, s_.h.data(), m, s_.mlp.data());
  for (int64_t r = 0; r < m; ++r) {  // silu(gate) * up, written over the gate half
    float* gate = s_.mlp.data() + r * 2 * inter;
    const float* up = gate + inter;
    kernels::silu_gate(gate, up, inter);
  }
  // down reads the gated rows with a stride of 2 * inter: pack them first.
  for (int64_t r = 1; r < m; ++r) std::copy_n(s_.mlp.data() + r * 2 * inter, inter, s_.mlp.data() + r * inter);
  linear(w.down, s_.mlp.data(), m, s_.out.data());
  add_into(s_.x.data(), s_.out.data(), m * hidden);
}

void ForwardRunner::run(std::span<const ForwardRow> rows, KvCache& cache, std::span<const int64_t> logit_rows,
                        float* logits) {
  // Every row's block before any write; run() checks the rows before it writes. A pool
  // that runs out or a row the checks refuse stops the call there and gives back what
  // the call took, so the slots hold what they held.
  std::vector<int32_t> reserved;
  try {
    for (const ForwardRow& r : rows) {
      cache.reserve(r.slot, r.position + 1);
      reserved.push_back(r.slot);
      for (int32_t slot : r.also_write) {
        cache.reserve(slot, r.position + 1);
        reserved.push_back(slot);
      }
    }
    const KvTables tables = tables_of(cache, reserved);
    apply_copies(tables, cache.pool());
    run(rows, tables, cache.pool(), logit_rows, logits);
  } catch (const SpecdError&) {
    for (int32_t slot : reserved) cache.truncate_to(slot, cache.length(slot));
    throw;
  }
}

void ForwardRunner::run(std::span<const ForwardRow> rows, const KvTables& tables, KvBlockPool& pool,
                        std::span<const int64_t> logit_rows, float* logits) {
  const auto start = std::chrono::steady_clock::now();
  const ModelConfig& c = weights_->config;
  check_rows(rows, tables);
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
    attention_block(layer, rows, tables, pool);
    mlp_block(layer, m);
  }
  const int64_t n = static_cast<int64_t>(logit_rows.size());
  for (int64_t i = 0; i < n; ++i) {  // the final norm of the rows whose logits are wanted, gathered
    rms_norm(s_.x.data() + logit_rows[i] * hidden, weights_->final_norm.data(), 1, hidden, c.rms_norm_eps,
             s_.h.data() + i * hidden);
  }
  linear(weights_->head(), s_.h.data(), n, logits);
  if (profiling_) {
    ++profile_.passes;
    profile_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

}  // namespace specd
