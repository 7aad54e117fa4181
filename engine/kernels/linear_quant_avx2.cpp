// AVX2 kernels of the block formats (compiled with -mavx2 -mfma -mf16c): a block of 16
// outputs is two ymm halves (bytes 0..31 and 32..63 of each 64-byte quant vector).
// vpmaddubsw multiplies unsigned by signed bytes into saturating int16 pairs, so:
// - Q8_0 as ggml does: |w| times x with w's sign (vpsignb), w = stored ^ 0x80 the signed
//   quant; at most 2 x 128 x 127 a pair, no saturation (w = -128 too: vpabsb gives 128);
// - Q4_0: the unsigned nibbles times x (at most 2 x 15 x 127), the offset 8 taken out by
//   group_start; the low and high nibbles' pairs added in int16 (at most 7620 a step).
// vpmaddwd by ones sums the pairs to int32.
//
// A tile runs R rows over NV blocks, one group at a time, and within a group one half
// block (8 outputs) at a time: only the R rows' int sums of that half stay in registers,
// so one unpacking of the weights serves up to kRows rows in 16 ymm registers. The float
// outputs (R x NV x 2 accumulators) spill to the stack beyond a few rows; a load and a
// store per half and group cost less than unpacking the weights again for every 2 rows
// (BENCHMARKS.md, "The AVX2 tier's block kernels"). The float chain is the reference
// kernel's: bit-identical to it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 8;
// Each 64-byte line of quants is prefetched this far ahead: with the hardware prefetcher
// alone the tile waited on memory (BENCHMARKS.md, "The AVX2 tier's block kernels").
constexpr int64_t kPrefetchAhead = 4096;

inline void prefetch_ahead(const std::byte* line) {
  _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchAhead), _MM_HINT_T0);
}

// One group of one half block (h) for R rows: the int32 sums of its 8 outputs, starting
// at group_start (Q4_0) or 0 (Q8_0, whose signed quants need no offset).
template <Dtype D, int R>
inline void half_group_sums(const KernelCall& c, const std::byte* q, const int32_t* xg, int64_t g, int64_t r0, int h,
                            __m256i (&sum)[R]) {
  const int64_t m = c.m;
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (D == Dtype::q8_0) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) sum[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      if (h == 0) prefetch_ahead(q + s * 64);
      const __m256i w =
          _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32)), bias);
      const __m256i aw = _mm256_abs_epi8(w);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i pairs = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(_mm256_set1_epi32(xg[s * m + r]), w));
        sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(pairs, ones));
      }
    }
  } else {
    // All four steps' pairs add up in int16 (at most 4 x 7620 = 30480) before one vpmaddwd.
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i pairs[R];
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
      if (h == 0) prefetch_ahead(q + s * 64);
      const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32));
      const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i step = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(xg[s * m + r])),
                                              _mm256_maddubs_epi16(hi, _mm256_set1_epi32(xg[(s + 4) * m + r])));
        pairs[r] = s == 0 ? step : _mm256_add_epi16(pairs[r], step);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      sum[r] = _mm256_add_epi32(_mm256_set1_epi32(c.group_start[g * m + r0 + r]), _mm256_madd_epi16(pairs[r], ones));
    }
  }
}

template <Dtype D, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr int64_t kQuantBytes = D == Dtype::q8_0 ? 512 : 256;
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, groups = c.w->in() / kQuantGroup;
  __m256 acc[R][NV][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v][0] = acc[r][v][1] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int32_t* xg = x + g * 8 * m;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const std::byte* blk = c.w->block(b0 + v);
      const auto* scales = reinterpret_cast<const __m128i*>(blk + groups * kQuantBytes + g * 32);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256i sum[R];
        half_group_sums<D, R>(c, blk + g * kQuantBytes, xg, g, r0, h, sum);
        const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(scales + h));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256 dx = _mm256_set1_ps(c.x_scale[g * m + r0 + r]);
          acc[r][v][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r]), _mm256_mul_ps(dw, dx), acc[r][v][h]);
        }
      }
    }
  }
  const int64_t out = c.w->out();
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t o0 = (b0 + v) * kB, lanes = std::min(kB, out - o0);
    for (int r = 0; r < R; ++r) {
      alignas(32) float y[kB];
      _mm256_store_ps(y, acc[r][v][0]);
      _mm256_store_ps(y + 8, acc[r][v][1]);
      std::memcpy(c.y + (r0 + r) * out + o0, y, lanes * sizeof(float));
    }
  }
}

// Blocks per tile: more quant streams in flight per thread at one and two rows (4 and 2
// blocks ran 10-20% faster than 2 and 1 there; BENCHMARKS.md, "The AVX2 tier's block kernels").
constexpr int tile_blocks(int rows) { return rows == 1 ? 4 : rows == 2 ? 2 : 1; }

template <Dtype D>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<D, R, NV>; });
}

}  // namespace

BlockKernel avx2_quant_kernel(Dtype d) {
  if (d == Dtype::q8_0) return blocks<Dtype::q8_0>;
  if (d == Dtype::q4_0) return blocks<Dtype::q4_0>;
  return nullptr;
}

}  // namespace specd::kernels::detail
