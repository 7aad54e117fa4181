// AVX-512F kernels (compiled with -mavx512f -mfma -mf16c): F32 weights, F16 weights
// widened in-register (vcvtph2ps), BF16 weights widened by a shift, all FMA'd in F32 in
// input order: bit-identical to the reference kernel. A register tile holds NV blocks of
// 16 outputs for R rows; each weight vector is loaded once and used for all R rows.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

struct F32 {
  static constexpr int kInputs = 1;  // inputs per step
  static constexpr int64_t kStepBytes = 64;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static void load(const std::byte* blk, int64_t k, __m512* w) {
    w[0] = _mm512_load_ps(reinterpret_cast<const float*>(blk) + k * kB);
  }
};

struct F16 {
  static constexpr int kInputs = 1;
  static constexpr int64_t kStepBytes = 32;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static void load(const std::byte* blk, int64_t k, __m512* w) {
    w[0] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk + k * 32)));
  }
};

struct BF16 {
  static constexpr int kInputs = 2;  // a step is a pair (i, i + 1) of 16 outputs
  static constexpr int64_t kStepBytes = 64;
  static int64_t steps(const PackedWeight& w) { return (w.in() + 1) / 2; }
  static void load(const std::byte* blk, int64_t k, __m512* w) {
    const __m512i v = _mm512_load_si512(blk + k * 64);
    w[0] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    w[1] = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
};

template <int R, int NV>
void store_tile(const KernelCall& c, int64_t b0, int64_t r0, const __m512 (&acc)[R][NV]) {
  const int64_t out = c.w->out();
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    const int64_t o0 = (b0 + v) * kB;
    const auto mask = static_cast<__mmask16>((1u << std::min<int64_t>(kB, out - o0)) - 1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(c.y + (r0 + r) * out + o0, mask, acc[r][v]);
  }
}

template <class P, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  const float* x = static_cast<const float*>(c.x) + r0;
  const std::byte* blk[NV];
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    blk[v] = c.w->block(b0 + v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r][v] = _mm512_setzero_ps();
  }
  const int64_t steps = P::steps(*c.w);
  for (int64_t k = 0; k < steps; ++k) {
    __m512 w[NV][P::kInputs];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      P::load(blk[v], k, w[v]);
      prefetch_ahead(blk[v] + k * P::kStepBytes);  // without it 5-8 rows took up to 1.9x as long
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int j = 0; j < P::kInputs; ++j) {
        const __m512 xb = _mm512_set1_ps(x[(k * P::kInputs + j) * c.m + r]);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(xb, w[v][j], acc[r][v]);
      }
    }
  }
  store_tile<R, NV>(c, b0, r0, acc);
}

template <class P>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kTileRows, avx512_tile_blocks>(c, b_begin, b_end,
                                                         []<int R, int NV>() { return tile<P, R, NV>; });
}

}  // namespace

BlockKernel avx512f_kernel(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return blocks<F32>;
    case Dtype::f16:
      return blocks<F16>;
    case Dtype::bf16:
      return blocks<BF16>;
    default:  // the block formats have their own kernels (linear_quant_*.cpp, linear_nibble_*.cpp)
      break;
  }
  return nullptr;
}

}  // namespace specd::kernels::detail
