// AVX-512F attention (compiled with -mavx512f -mfma): the AVX2 kernel's structure with
// 16-float vectors. Scores: a 16-position chunk of transposed keys is one vector; the
// head dimension alternates between two accumulators per head for more FMAs in flight.
// Values: 16 dimensions at a time, even and odd rows in two accumulators.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/kernels/attention_isa.hpp"

namespace specd::kernels::detail {

namespace {

// 16 BF16 values to floats, in order.
inline __m512 widen16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// exp(x) for x <= 0 or -inf, as in the AVX2 kernel (Cephes' expf; 0 below -87).
inline __m512 exp_nonpositive(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.0f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lowest, _CMP_LT_OQ);
  x = _mm512_max_ps(lowest, x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i two_n = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_mul_ps(y, _mm512_castsi512_ps(two_n)));
}

// Lanes combined in a fixed tree.
template <class Op>
float reduce(__m512 v, Op op) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  for (int width = 8; width > 0; width /= 2) {
    for (int i = 0; i < width; ++i) l[i] = op(l[i], l[i + width]);
  }
  return l[0];
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
    __m512 acc[G][2];
    for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm512_setzero_ps();
    for (int64_t i = 0; i < d; i += 2) {
      const __m512 k0 = widen16(k + i * bs), k1 = widen16(k + (i + 1) * bs);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        acc[g][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * d + i]), k0, acc[g][0]);
        acc[g][1] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * d + i + 1]), k1, acc[g][1]);
      }
    }
    const __m512 scale = _mm512_set1_ps(c.scale);
    for (int g = 0; g < G; ++g) {
      _mm512_storeu_ps(c.scores + (g0 + g) * c.padded + p0, _mm512_mul_ps(_mm512_add_ps(acc[g][0], acc[g][1]), scale));
    }
  }
}

// Replaces s[0, n) by exp(s - max s) and returns their sum.
float softmax_weights(float* s, int64_t n) {
  const int64_t whole = (n + 15) / 16 * 16;
  std::fill(s + n, s + whole, -INFINITY);  // weight 0 for the lanes past the keys
  __m512 top = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < whole; j += 16) top = _mm512_max_ps(top, _mm512_loadu_ps(s + j));
  const __m512 m = _mm512_set1_ps(reduce(top, [](float a, float b) { return std::max(a, b); }));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < whole; j += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(s + j), m));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
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
      __m512 acc[G][2];
      for (int g = 0; g < G; ++g) {
        acc[g][0] = _mm512_loadu_ps(out + g * d + i0);
        acc[g][1] = _mm512_setzero_ps();
      }
      int64_t j = 0;
      for (; j + 1 < n; j += 2) {
        const __m512 v0 = widen16(v + j * d + i0), v1 = widen16(v + (j + 1) * d + i0);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          acc[g][0] = _mm512_fmadd_ps(_mm512_set1_ps(w[g * c.padded + j]), v0, acc[g][0]);
          acc[g][1] = _mm512_fmadd_ps(_mm512_set1_ps(w[g * c.padded + j + 1]), v1, acc[g][1]);
        }
      }
      if (j < n) {
        const __m512 v0 = widen16(v + j * d + i0);
        for (int g = 0; g < G; ++g) acc[g][0] = _mm512_fmadd_ps(_mm512_set1_ps(w[g * c.padded + j]), v0, acc[g][0]);
      }
      for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + g * d + i0, _mm512_add_ps(acc[g][0], acc[g][1]));
    }
  }
  for (int g = 0; g < G; ++g) {
    const __m512 f = _mm512_set1_ps(inv[g]);
    for (int64_t i = 0; i < d; i += 16)
      _mm512_storeu_ps(out + g * d + i, _mm512_mul_ps(_mm512_loadu_ps(out + g * d + i), f));
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

void attention_avx512f(const AttentionCall& c) {
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
