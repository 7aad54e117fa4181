#pragma once
// Internal to engine/kernels: the per-ISA attention kernels behind attend(), each in its
// own translation unit with its own -m flags (CMakeLists.txt).
#include <cstdint>

#include "engine/kernels/attention.hpp"

namespace specd::kernels::detail {

struct AttentionCall {
  PagedKv kv;
  int64_t keys = 0;
  const float* q = nullptr;
  int32_t group = 0;
  float scale = 0;
  float* out = nullptr;
  // group x padded floats, padded = keys rounded up to whole blocks: the scores, then
  // the unnormalised softmax weights.
  float* scores = nullptr;
  int64_t padded = 0;
};

void attention_reference(const AttentionCall& c);
void attention_avx2(const AttentionCall& c);
void attention_avx512f(const AttentionCall& c);

// The vector kernels take head_dim and block_size in multiples of this.
constexpr int32_t kAttentionVectorMultiple = 16;
// Query heads a vector kernel carries through one pass over the blocks.
constexpr int kAttentionHeadTile = 4;

}  // namespace specd::kernels::detail
