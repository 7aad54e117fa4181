// AVX2 attention (compiled with -mavx2 -mfma): up to 4 query heads of one KV head per
// pass over the blocks. Scores: a 16-position chunk of transposed keys is two vectors,
// FMA'd into each head's two accumulators (no horizontal sums). Softmax weights with a
// polynomial exp. Values: 16 dimensions at a time, each row of a block widened once
// and FMA'd into every head's output.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/kernels/attention_isa.hpp"

namespace specd::kernels::detail {

namespace {

// 8 BF16 values to floats, in order.
inline __m256 widen8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// exp(x) for x <= 0 or -inf: Cephes' expf (x = n ln2 + r, a degree-6 polynomial in r),
// relative error about 2e-7; 0 below -87, where expf leaves the normal floats.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.0f);
  const __m256 under = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
  x = _mm256_max_ps(lowest, x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, _mm256_castsi256_ps(two_n)));
}

// Lanes combined in a fixed tree, so the result never depends on anything but the lanes.
template <class Op>
float reduce(__m256 v, Op op) {
  alignas(32) float l[8];
  _mm256_store_ps(l, v);
  return op(op(op(l[0], l[4]), op(l[2], l[6])), op(op(l[1], l[5]), op(l[3], l[7])));
}

// Blocks are scattered in the pool, so the hardware prefetcher, which stays within a
// page, starts cold at each one: ask for the next block's part while this one is read.
inline void prefetch(const uint16_t* p, int64_t elements) {
  for (int64_t i = 0; i < elements; i += 32) _mm_prefetch(reinterpret_cast<const char*>(p + i), _MM_HINT_T0);
}

template <int G>
void scores(const AttentionCall& c, int32_t g0) {
  const PagedKv& kv = c.kv;
  const int64_t bs = kv.block_size, d = kv.head_dim;
  const float* q = c.q + g0 * d;
  for (int64_t p0 = 0; p0 < c.keys; p0 += 16) {  // a 16-position chunk inside one block
    const int64_t b = p0 / bs, j0 = p0 % bs;
    const uint16_t* k = kv.keys + kv.blocks[b] * kv.block_stride + kv.head_offset + j0;
    if (j0 == 0 && p0 + bs < c.keys) prefetch(kv.keys + kv.blocks[b + 1] * kv.block_stride + kv.head_offset, bs * d);
    __m256 acc[G][2];
    for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; ++i) {
      const __m256 k0 = widen8(k + i * bs), k1 = widen8(k + i * bs + 8);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const __m256 qb = _mm256_broadcast_ss(q + g * d + i);
        acc[g][0] = _mm256_fmadd_ps(qb, k0, acc[g][0]);
        acc[g][1] = _mm256_fmadd_ps(qb, k1, acc[g][1]);
      }
    }
    const __m256 scale = _mm256_set1_ps(c.scale);
    for (int g = 0; g < G; ++g) {
      float* s = c.scores + (g0 + g) * c.padded + p0;
      _mm256_storeu_ps(s, _mm256_mul_ps(acc[g][0], scale));
      _mm256_storeu_ps(s + 8, _mm256_mul_ps(acc[g][1], scale));
    }
  }
}

// Replaces s[0, n) by exp(s - max s) and returns their sum.
float softmax_weights(float* s, int64_t n) {
  const int64_t whole = (n + 7) / 8 * 8;
  std::fill(s + n, s + whole, -INFINITY);  // weight 0 for the lanes past the keys
  __m256 top = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < whole; j += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(s + j));
  const __m256 m = _mm256_set1_ps(reduce(top, [](float a, float b) { return std::max(a, b); }));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < whole; j += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  return reduce(sum, [](float a, float b) { return a + b; });
}

template <int G>
void values(const AttentionCall& c, int32_t g0, const float (&inv)[G]) {
  const PagedKv& kv = c.kv;
  const int64_t bs = kv.block_size, d = kv.head_dim;
  float* out = c.out + g0 * d;
  std::fill(out, out + G * d, 0.0f);
  for (int64_t p0 = 0; p0 < c.keys; p0 += bs) {
    const uint16_t* v = kv.values + kv.blocks[p0 / bs] * kv.block_stride + kv.head_offset;
    if (p0 + bs < c.keys) prefetch(kv.values + kv.blocks[p0 / bs + 1] * kv.block_stride + kv.head_offset, bs * d);
    const float* w = c.scores + g0 * c.padded + p0;
    const int64_t n = std::min(bs, c.keys - p0);
    for (int64_t i0 = 0; i0 < d; i0 += 16) {
      __m256 acc[G][2];
      for (int g = 0; g < G; ++g) {
        acc[g][0] = _mm256_loadu_ps(out + g * d + i0);
        acc[g][1] = _mm256_loadu_ps(out + g * d + i0 + 8);
      }
      for (int64_t j = 0; j < n; ++j) {
        const __m256 v0 = widen8(v + j * d + i0), v1 = widen8(v + j * d + i0 + 8);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256 wb = _mm256_broadcast_ss(w + g * c.padded + j);
          acc[g][0] = _mm256_fmadd_ps(wb, v0, acc[g][0]);
          acc[g][1] = _mm256_fmadd_ps(wb, v1, acc[g][1]);
        }
      }
      for (int g = 0; g < G; ++g) {
        _mm256_storeu_ps(out + g * d + i0, acc[g][0]);
        _mm256_storeu_ps(out + g * d + i0 + 8, acc[g][1]);
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    const __m256 f = _mm256_set1_ps(inv[g]);
    for (int64_t i = 0; i < d; i += 8)
      _mm256_storeu_ps(out + g * d + i, _mm256_mul_ps(_mm256_loadu_ps(out + g * d + i), f));
  }
}

template <int G>
void heads(const AttentionCall& c, int32_t g0) {
  scores<G>(c, g0);
  float inv[G];
  for (int g = 0; g < G; ++g) inv[g] = 1.0f / softmax_weights(c.scores + (g0 + g) * c.padded, c.keys);
  values<G>(c, g0, inv);
}

}  // namespace

void attention_avx2(const AttentionCall& c) {
  static_assert(kAttentionHeadTile == 4);
  for (int32_t g0 = 0; g0 < c.group; g0 += kAttentionHeadTile) {
    switch (std::min(kAttentionHeadTile, c.group - g0)) {
      case 1:
        heads<1>(c, g0);
        break;
      case 2:
        heads<2>(c, g0);
        break;
      case 3:
        heads<3>(c, g0);
        break;
      default:
        heads<4>(c, g0);
    }
  }
}

}  // namespace specd::kernels::detail
