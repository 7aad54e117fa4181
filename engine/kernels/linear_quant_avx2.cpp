// AVX2 kernels of the block formats (compiled with -mavx2 -mfma -mf16c): a block of 16
// outputs is two ymm halves (bytes 0..31 and 32..63 of each 64-byte quant vector).
// vpmaddubsw multiplies unsigned by signed bytes into saturating int16 pairs, so:
// - Q8_0 as ggml does: |w| times x with w's sign (vpsignb), w = stored ^ 0x80 the signed
//   quant; at most 2 x 128 x 127 a pair, no saturation (w = -128 too: vpabsb gives 128);
// - Q4_0: the unsigned nibbles times x (at most 2 x 15 x 127), the offset 8 taken out by
//   group_start; the low and high nibbles' pairs added in int16 (at most 7620 a step).
// vpmaddwd by ones sums the pairs to int32. A tile holds one block for up to 2 rows (16
// ymm registers); the rows of a call pass over each block in turn while it sits in L1/L2.
// The float chain is the reference kernel's: bit-identical to it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 2;

template <Dtype D, int R>
void tile(const KernelCall& c, int64_t b, int64_t r0) {
  constexpr int64_t kQuantBytes = D == Dtype::q8_0 ? 512 : 256;
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, groups = c.w->in() / kQuantGroup;
  const std::byte* blk = c.w->block(b);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    // Q8_0 multiplies the signed quants (q + 128 back to q), so its sums start at zero.
    __m256i sum[R][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      sum[r][0] = sum[r][1] =
          D == Dtype::q8_0 ? _mm256_setzero_si256() : _mm256_set1_epi32(c.group_start[g * m + r0 + r]);
    }
    const int32_t* xg = x + g * 8 * m;
    const std::byte* q = blk + g * kQuantBytes;
    if constexpr (D == Dtype::q8_0) {
      const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        __m256i w[2], aw[2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          w[h] = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32)), bias);
          aw[h] = _mm256_abs_epi8(w[h]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i xb = _mm256_set1_epi32(xg[s * m + r]);
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            const __m256i pairs = _mm256_maddubs_epi16(aw[h], _mm256_sign_epi8(xb, w[h]));
            sum[r][h] = _mm256_add_epi32(sum[r][h], _mm256_madd_epi16(pairs, ones));
          }
        }
      }
    } else {
      // All four steps' pairs add up in int16 (at most 4 x 7620 = 30480) before one vpmaddwd:
      // 17 instructions a row and half per group instead of 20.
      const __m256i low4 = _mm256_set1_epi8(0x0f);
      __m256i pairs[R][2];
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        __m256i lo[2], hi[2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32));
          lo[h] = _mm256_and_si256(raw, low4);
          hi[h] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i xlo = _mm256_set1_epi32(xg[s * m + r]), xhi = _mm256_set1_epi32(xg[(s + 4) * m + r]);
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            const __m256i step = _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], xlo), _mm256_maddubs_epi16(hi[h], xhi));
            pairs[r][h] = s == 0 ? step : _mm256_add_epi16(pairs[r][h], step);
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) sum[r][h] = _mm256_add_epi32(sum[r][h], _mm256_madd_epi16(pairs[r][h], ones));
      }
    }
    const auto* scales = reinterpret_cast<const __m128i*>(blk + groups * kQuantBytes + g * 32);
    const __m256 dw[2] = {_mm256_cvtph_ps(_mm_load_si128(scales)), _mm256_cvtph_ps(_mm_load_si128(scales + 1))};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_set1_ps(c.x_scale[g * m + r0 + r]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][h]), _mm256_mul_ps(dw[h], dx), acc[r][h]);
      }
    }
  }
  const int64_t out = c.w->out(), lanes = std::min(kB, out - b * kB);
  for (int r = 0; r < R; ++r) {
    alignas(32) float y[kB];
    _mm256_store_ps(y, acc[r][0]);
    _mm256_store_ps(y + 8, acc[r][1]);
    std::memcpy(c.y + (r0 + r) * out + b * kB, y, lanes * sizeof(float));
  }
}

template <Dtype D>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_tiles_per_block<kRows>(c, b_begin, b_end, []<int R>() { return tile<D, R>; });
}

}  // namespace

BlockKernel avx2_quant_kernel(Dtype d) {
  if (d == Dtype::q8_0) return blocks<Dtype::q8_0>;
  if (d == Dtype::q4_0) return blocks<Dtype::q4_0>;
  return nullptr;
}

}  // namespace specd::kernels::detail
