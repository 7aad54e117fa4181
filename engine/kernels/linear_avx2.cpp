// AVX2 kernels (compiled with -mavx2 -mfma -mf16c): a block of 16 outputs is two ymm
// vectors; a tile holds one block for up to 4 rows (16 ymm registers), and the rows of a
// call pass over each block in turn while it sits in L1/L2. FMA in input order, like
// the reference kernel, so the results are bit-identical to it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 4;

struct F32 {
  static constexpr int kInputs = 1;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static void load(const std::byte* blk, int64_t k, int h, __m256* w) {
    w[0] = _mm256_load_ps(reinterpret_cast<const float*>(blk + k * 64 + h * 32));
  }
};

struct F16 {
  static constexpr int kInputs = 1;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static void load(const std::byte* blk, int64_t k, int h, __m256* w) {
    w[0] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(blk + k * 32 + h * 16)));
  }
};

struct BF16 {
  static constexpr int kInputs = 2;
  static int64_t steps(const PackedWeight& w) { return (w.in() + 1) / 2; }
  static void load(const std::byte* blk, int64_t k, int h, __m256* w) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + k * 64 + h * 32));
    w[0] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    w[1] = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
};

template <class P, int R>
void tile(const KernelCall& c, int64_t b, int64_t r0) {
  const float* x = static_cast<const float*>(c.x) + r0;
  const std::byte* blk = c.w->block(b);
  __m256 acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const int64_t steps = P::steps(*c.w);
  for (int64_t k = 0; k < steps; ++k) {
    __m256 w[2][P::kInputs];
    P::load(blk, k, 0, w[0]);
    P::load(blk, k, 1, w[1]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int j = 0; j < P::kInputs; ++j) {
        const __m256 xb = _mm256_set1_ps(x[(k * P::kInputs + j) * c.m + r]);
        acc[r][0] = _mm256_fmadd_ps(xb, w[0][j], acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(xb, w[1][j], acc[r][1]);
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

template <class P>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_tiles_per_block<kRows>(c, b_begin, b_end, []<int R>() { return tile<P, R>; });
}

}  // namespace

BlockKernel avx2_kernel(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return blocks<F32>;
    case Dtype::f16:
      return blocks<F16>;
    case Dtype::bf16:
      return blocks<BF16>;
    case Dtype::q8_0:  // the block formats have their own kernels (linear_quant_*.cpp)
    case Dtype::q4_0:
      break;
  }
  return nullptr;
}

}  // namespace specd::kernels::detail
