// AVX2 kernels (compiled with -mavx2 -mfma -mf16c): a block of 16 outputs is two ymm
// vectors; a tile holds NV blocks for up to 6 rows, and more rows pass over groups of
// blocks in turn while they sit in L2. FMA in input order, like the reference kernel,
// so the results are bit-identical to it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 5;

// Each P::load gives input j of step k for one ymm half of 16 outputs; a step of a block
// is kStepBytes.
struct F32 {
  static constexpr int kInputs = 1;
  static constexpr int64_t kStepBytes = 64;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static __m256 load(const std::byte* blk, int64_t k, int h, int) {
    return _mm256_load_ps(reinterpret_cast<const float*>(blk + k * 64 + h * 32));
  }
};

struct F16 {
  static constexpr int kInputs = 1;
  static constexpr int64_t kStepBytes = 32;
  static int64_t steps(const PackedWeight& w) { return w.in(); }
  static __m256 load(const std::byte* blk, int64_t k, int h, int) {
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(blk + k * 32 + h * 16)));
  }
};

struct BF16 {
  static constexpr int kInputs = 2;
  static constexpr int64_t kStepBytes = 64;
  static int64_t steps(const PackedWeight& w) { return (w.in() + 1) / 2; }
  static __m256 load(const std::byte* blk, int64_t k, int h, int j) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + k * 64 + h * 32));
    return _mm256_castsi256_ps(j == 0 ? _mm256_slli_epi32(v, 16)
                                      : _mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
};

// R rows x NV blocks: 2 R NV accumulators, one FMA chain each in input order. An FMA
// waits on the one before it in its chain (4 cycles), and two issue a cycle, so a tile
// needs 8 chains to keep the FMA units busy: one block for one row (2 chains) ran at a
// quarter of their rate, and a 5-row pass (a 4-row tile, then a 1-row one) cost twice a
// 4-row pass. A block's weights of input j are widened for all the tile's rows, then the
// next block's: the accumulators share the 16 ymm registers with two weight vectors and
// a broadcast, so 5 rows fit; at 6 rows the compiler kept accumulators on the stack.
template <class P, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  const float* x = static_cast<const float*>(c.x) + r0;
  const std::byte* blk[NV];
  __m256 acc[R][NV][2];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    blk[v] = c.w->block(b0 + v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][v][0] = acc[r][v][1] = _mm256_setzero_ps();
  }
  const int64_t steps = P::steps(*c.w);
  for (int64_t k = 0; k < steps; ++k) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      // Without it a tile of 3-5 rows (one block, one stream a thread) waited on memory: a
      // 5-row pass of 3072 x 8192 BF16 took 2.6x one row, and 1.3x with it.
      prefetch_ahead(blk[v] + k * P::kStepBytes);
#pragma GCC unroll 2
      for (int j = 0; j < P::kInputs; ++j) {
        const __m256 w0 = P::load(blk[v], k, 0, j), w1 = P::load(blk[v], k, 1, j);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256 xb = _mm256_set1_ps(x[(k * P::kInputs + j) * c.m + r]);
          acc[r][v][0] = _mm256_fmadd_ps(xb, w0, acc[r][v][0]);
          acc[r][v][1] = _mm256_fmadd_ps(xb, w1, acc[r][v][1]);
        }
      }
    }
  }
  const int64_t out = c.w->out();
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t lanes = std::min(kB, out - (b0 + v) * kB);
    for (int r = 0; r < R; ++r) {
      alignas(32) float y[kB];
      _mm256_store_ps(y, acc[r][v][0]);
      _mm256_store_ps(y + 8, acc[r][v][1]);
      std::memcpy(c.y + (r0 + r) * out + (b0 + v) * kB, y, lanes * sizeof(float));
    }
  }
}

// Blocks per tile for r rows: 6 to 10 chains, 10 accumulators at most.
constexpr int tile_blocks(int rows) { return rows == 1 ? 4 : rows == 2 ? 2 : 1; }

template <class P>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<P, R, NV>; });
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
    default:  // the block formats have their own kernels (linear_quant_*.cpp, linear_nibble_*.cpp)
      break;
  }
  return nullptr;
}

}  // namespace specd::kernels::detail
