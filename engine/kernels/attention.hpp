#pragma once
// Attention of one row's query heads over a paged BF16 KV cache: the query heads that
// share one KV head (grouped-query attention) are done together, so each block of keys
// and values is read once for all of them while it sits in L1. Scores, softmax and the
// weighted sum of values run in F32 (keys and values widened from BF16).
//
// Row independence: a row's output depends only on its query, the cache and `keys`,
// never on other rows or threads; each kernel is deterministic (fixed summation order).
// The tiers (reference, AVX2, AVX-512F) agree within the bound attention_kernels_test
// states, not bit for bit (their exp and summation orders differ). Shapes a vector tier
// does not take (head_dim or block_size not a multiple of 16) run the reference kernel.
#include <cstdint>

#include "engine/kernels/linear.hpp"

namespace specd::kernels {

// One KV head of a layer as the kernels read it. Block b of the pool starts
// block_stride elements into `keys` and `values`; this head's part of it starts
// head_offset elements further. There, keys are [head_dim][block_size] (a vector holds
// one dimension of consecutive positions, so scores need no horizontal sums) and values
// [block_size][head_dim]; all BF16 bits.
struct PagedKv {
  const uint16_t* keys = nullptr;
  const uint16_t* values = nullptr;
  int64_t block_stride = 0;
  int64_t head_offset = 0;
  const int32_t* blocks = nullptr;  // the sequence's block table: position p is in blocks[p / block_size]
  int32_t block_size = 0;
  int32_t head_dim = 0;
};

// out[g] = softmax(scale * q[g] . K^T) . V over positions [0, keys) for the `group`
// query heads q[g] (group x head_dim floats, contiguous); out likewise. keys >= 1.
// Allocation-free after the first calls on a thread (a thread-local score buffer grows).
void attend(const PagedKv& kv, int64_t keys, const float* q, int32_t group, float scale, float* out);

// The same with an explicit tier (tests and benchmarks); avx512bf16 means the AVX-512F
// kernel. Throws std::invalid_argument when this CPU lacks the ISA.
void attend(const PagedKv& kv, int64_t keys, const float* q, int32_t group, float scale, float* out, Isa isa);

}  // namespace specd::kernels
