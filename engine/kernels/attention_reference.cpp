// The portable attention kernel: plain loops in F32 with std::exp, the tiers' model.
#include <algorithm>
#include <bit>
#include <cmath>

#include "engine/kernels/attention_isa.hpp"

namespace specd::kernels::detail {

namespace {

float widen(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace

void attention_reference(const AttentionCall& c) {
  const PagedKv& kv = c.kv;
  const int64_t bs = kv.block_size, d = kv.head_dim, blocks = (c.keys + bs - 1) / bs;
  for (int32_t g = 0; g < c.group; ++g) {
    const float* q = c.q + g * d;
    float* s = c.scores + g * c.padded;
    float* out = c.out + g * d;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint16_t* k = kv.keys + kv.blocks[b] * kv.block_stride + kv.head_offset;
      const int64_t n = std::min(bs, c.keys - b * bs);
      float* sb = s + b * bs;
      std::fill(sb, sb + n, 0.0f);
      for (int64_t i = 0; i < d; ++i) {  // each score sums over i in order; the inner loop runs along a key row
        for (int64_t j = 0; j < n; ++j) sb[j] += q[i] * widen(k[i * bs + j]);
      }
      for (int64_t j = 0; j < n; ++j) sb[j] *= c.scale;
    }
    const float top = *std::max_element(s, s + c.keys);
    float sum = 0;
    for (int64_t j = 0; j < c.keys; ++j) sum += s[j] = std::exp(s[j] - top);
    std::fill(out, out + d, 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
      const uint16_t* v = kv.values + kv.blocks[b] * kv.block_stride + kv.head_offset;
      for (int64_t j = 0; j < std::min(bs, c.keys - b * bs); ++j) {
        const float p = s[b * bs + j];
        for (int64_t i = 0; i < d; ++i) out[i] += p * widen(v[j * d + i]);
      }
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < d; ++i) out[i] *= inv;
  }
}

}  // namespace specd::kernels::detail
