// AVX-512 BF16 kernel (compiled with -mavx512f -mavx512bf16): BF16 weights in pairs,
// activations rounded to BF16 pairs, vdpbf16ps into F32 accumulators. A register tile
// holds NV blocks of 16 outputs for R rows; each 64-byte weight vector (16 outputs x 2
// inputs) is loaded once and used for all R rows. Each output is one accumulator chain
// over the pairs in order, whatever R, NV or the thread split: rows are independent.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

// acc += the dot products of w's pairs with the pair at x, broadcast from memory inside
// the instruction: a separate broadcast uop competed with vdpbf16ps (BENCHMARKS.md,
// "Kernel tuning choices"). Inline asm, because clang 16.0.6 crashes (an
// internal compiler error at -O1 and above) when it folds _mm512_set1_epi32 into
// _mm512_dpbf16_ps itself.
inline void dot_pairs(__m512& acc, __m512i w, const uint32_t& x) {
  asm("vdpbf16ps %[x]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "m"(x));
}

// How far ahead each weight line is prefetched. Tiles of many rows are compute-bound
// and the prefetcher alone fell behind there (2048 bytes). With fewer rows the hardware
// prefetcher kept up on one host (M <= 8 unchanged by prefetching) and not on another,
// where kPrefetchAhead made M = 1 to 8 take 0.7-0.8x the time (BENCHMARKS.md, "Kernel
// tuning choices" and "Prefetching the BF16 kernels' weights").
template <int R>
constexpr int64_t kBf16PrefetchAhead = R > 8 ? 2048 : kPrefetchAhead;

template <int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  const auto* x = static_cast<const uint32_t*>(c.x) + r0;
  const std::byte* blk[NV];
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    blk[v] = c.w->block(b0 + v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r][v] = _mm512_setzero_ps();
  }
  const int64_t pairs = (c.w->in() + 1) / 2;
  for (int64_t k = 0; k < pairs; ++k) {
    __m512i w[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      w[v] = _mm512_load_si512(blk[v] + k * 64);
      prefetch_ahead(blk[v] + k * 64, kBf16PrefetchAhead<R>);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const uint32_t& xr = x[k * c.m + r];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) dot_pairs(acc[r][v], w[v], xr);
    }
  }
  const int64_t out = c.w->out();
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    const int64_t o0 = (b0 + v) * kB;
    const auto mask = static_cast<__mmask16>((1u << std::min<int64_t>(kB, out - o0)) - 1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(c.y + (r0 + r) * out + o0, mask, acc[r][v]);
  }
}

// Blocks per tile for R rows: up to 28 accumulators, plus NV weight registers (the
// broadcasts are memory operands). Wider tiles at 8 rows overlapped loads and
// arithmetic better.
constexpr int tile_blocks(int rows) { return rows <= 7 ? 4 : rows <= 9 ? 3 : rows <= 14 ? 2 : 1; }

void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kTileRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<R, NV>; });
}

}  // namespace

BlockKernel avx512bf16_kernel() { return blocks; }

}  // namespace specd::kernels::detail
