#pragma once
// The inference forward pass of a Llama model on its packed weights (InferenceWeights)
// and its KV cache: the four linears of a layer through the kernels (engine/kernels/),
// and between them plain loops over float rows: fused RMSNorm, RoPE from a table,
// attention over each slot's cache blocks (engine/kernels/attention), SiLU-gating,
// residual adds. No tensor
// ops, no dispatcher, and scratch buffers that only grow, so a steady decode allocates
// nothing. Not thread-safe: one lane drives a runner (its kernels use the lane's
// KernelThreads).
//
// Row independence: a row's numbers depend only on its token, its slot's cache and its
// position, never on the other rows of the call, so a verify pass of K + 1 rows yields
// bit for bit what K + 1 one-row steps would (greedy speculation equals target-only).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model/inference_weights.hpp"

namespace specd {

class KvBlockPool;
class KvCache;
struct KvTables;

// One token to run: where its key and value go and which keys it sees (0..position of
// `slot`). A token-tree node also writes its key and value into the branches of its
// other descendants (`also_write`, KvLedger::fork), so each node reads one slot that
// holds exactly its path: the numbers a chain of the same tokens would give.
struct ForwardRow {
  int64_t token = 0;
  int32_t slot = 0;
  int64_t position = 0;
  std::span<const int32_t> also_write = {};
};

// Where the passes' wall time went since profiling was switched on (bench: the parts of
// a decode step). Off by default: a profiled pass reads the clock a few times a layer.
struct ForwardProfile {
  int64_t passes = 0;
  double seconds = 0;    // whole passes
  double linear = 0;     // the linear layers (kernels::linear, lm_head included)
  double attention = 0;  // attend(): scores, softmax and values over the cache
  // Left: norms, RoPE, KV writes, SiLU gating, residual adds, embedding.
  double other() const { return seconds - linear - attention; }
};

class ForwardRunner {
 public:
  explicit ForwardRunner(std::shared_ptr<const InferenceWeights> weights);

  const InferenceWeights& weights() const { return *weights_; }

  // Runs rows through every layer, writing their keys and values into the storage at
  // their positions of the tables' blocks (the caller made the tables' copies, see
  // apply_copies, and keeps the lengths), and writes the logits of the rows listed in logit_rows (indices
  // into rows) to logits, [logit_rows.size(), vocab]. A slot's rows must come in position
  // order, at or past its length (also_write slots likewise), within its blocks. Throws
  // SpecdError for a token outside the vocabulary, a position outside the cache, below
  // its slot's length or beyond its blocks.
  void run(std::span<const ForwardRow> rows, const KvTables& tables, KvBlockPool& pool,
           std::span<const int64_t> logit_rows, float* logits);
  // The same on a cache of its own: takes the blocks the rows need first (out_of_capacity
  // when the pool has too few left; the call then gives back every block beyond the
  // slots' lengths).
  void run(std::span<const ForwardRow> rows, KvCache& cache, std::span<const int64_t> logit_rows, float* logits);

  // Profiling on starts the profile from zero; off keeps it for reading.
  void set_profiling(bool on);
  const ForwardProfile& profile() const { return profile_; }

 private:
  struct Scratch {
    std::vector<float> x, h, qkv, attn, mlp, out;
  };
  void check_rows(std::span<const ForwardRow> rows, const KvTables& tables);
  void ensure_rope(int64_t positions);
  void embed(std::span<const ForwardRow> rows);
  void attention_block(int64_t layer, std::span<const ForwardRow> rows, const KvTables& tables, KvBlockPool& pool);
  void mlp_block(int64_t layer, int64_t m);
  void attend(std::span<const ForwardRow> rows, const KvTables& tables, const KvBlockPool& pool, int64_t layer);
  void linear(const kernels::PackedWeight& w, const float* x, int64_t m, float* y);  // timed when profiling

  std::shared_ptr<const InferenceWeights> weights_;
  std::vector<float> rope_cos_, rope_sin_;  // [positions][head_dim / 2], grown on demand
  int64_t rope_positions_ = 0;
  std::vector<float> inv_freq_;
  Scratch s_;
  bool profiling_ = false;
  ForwardProfile profile_;
};

}  // namespace specd
