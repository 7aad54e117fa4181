// AVX-512 VNNI kernels of the block formats (compiled with -mavx512f -mavx512bw
// -mavx512vnni -mf16c): vpdpbusd multiplies 64 unsigned weight quants by the row's four
// int8 activations, broadcast, into 16 int32 sums; a group's sums start at
// group_start, so they come out exact. A register tile holds NV blocks of 16 outputs for
// R rows: each weight vector is loaded (and for Q4_0 unpacked) once for all R rows. The
// float chain per output, fma(float(sum), d_w * d_x, acc) in group order, is the
// reference kernel's: bit-identical to it whatever R, NV or the thread split.
//
// Why int8 activations and vpdpbusd rather than weights widened to BF16 for vdpbf16ps: a
// 16 x 32 weight group costs a row 8 vpdpbusd against 16 vdpbf16ps, before any widening;
// this kernel took 1.4-2x less time than the BF16-weight kernel with the weights in L2
// (BENCHMARKS.md, "Kernel tuning choices").
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
// Tiles of more than kPrefetchRows rows prefetch their weights: the hardware prefetcher
// alone left them waiting on memory. Q4_0 gains from it at every M, Q8_0 loses at M = 1
// (BENCHMARKS.md, "Kernel tuning choices").
template <Dtype D>
constexpr int kPrefetchRows = D == Dtype::q4_0 ? 0 : 4;

template <Dtype D, int R>
inline void prefetch_if_many_rows(const std::byte* p) {
  if constexpr (R > kPrefetchRows<D>) prefetch_ahead(p);
}

template <Dtype D, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr int64_t kQuantBytes = D == Dtype::q8_0 ? 512 : 256;  // a group's quants of one block
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, groups = c.w->in() / kQuantGroup;
  const std::byte* blk[NV];
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    blk[v] = c.w->block(b0 + v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i sum[R][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512i start = _mm512_set1_epi32(c.group_start[g * m + r0 + r]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) sum[r][v] = start;
    }
    const int32_t* xg = x + g * 8 * m;  // the group's 8 input quads
    if constexpr (D == Dtype::q8_0) {
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        __m512i w[NV];
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) {
          w[v] = _mm512_load_si512(blk[v] + g * kQuantBytes + s * 64);
          prefetch_if_many_rows<D, R>(blk[v] + g * kQuantBytes + s * 64);
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const __m512i xb = _mm512_set1_epi32(xg[s * m + r]);
#pragma GCC unroll 16
          for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_dpbusd_epi32(sum[r][v], w[v], xb);
        }
      }
    } else {
      const __m512i low4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {  // low nibbles: inputs 4s..4s+3, high: 16 + 4s..
        __m512i lo[NV], hi[NV];
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) {
          const __m512i raw = _mm512_load_si512(blk[v] + g * kQuantBytes + s * 64);
          prefetch_if_many_rows<D, R>(blk[v] + g * kQuantBytes + s * 64);
          lo[v] = _mm512_and_si512(raw, low4);
          hi[v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const __m512i xlo = _mm512_set1_epi32(xg[s * m + r]), xhi = _mm512_set1_epi32(xg[(s + 4) * m + r]);
#pragma GCC unroll 16
          for (int v = 0; v < NV; ++v) {
            sum[r][v] = _mm512_dpbusd_epi32(sum[r][v], lo[v], xlo);
            sum[r][v] = _mm512_dpbusd_epi32(sum[r][v], hi[v], xhi);
          }
        }
      }
    }
    __m512 dw[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      dw[v] =
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk[v] + groups * kQuantBytes + g * 32)));
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 dx = _mm512_set1_ps(c.x_scale[g * m + r0 + r]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) {
        acc[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r][v]), _mm512_mul_ps(dw[v], dx), acc[r][v]);
      }
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

// Blocks per tile for R rows: 2 * R * NV accumulators (the group's int32 sums and the
// float outputs) and the NV weight vectors, about the 32 zmm registers. At 8 rows two
// blocks beat one despite a few spills; at 16 they spill too much (BENCHMARKS.md,
// "Kernel tuning choices").
constexpr int tile_blocks(int rows) { return rows <= 2 ? 4 : rows <= 4 ? 3 : rows <= 8 ? 2 : 1; }

template <Dtype D>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kTileRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<D, R, NV>; });
}

}  // namespace

BlockKernel avx512vnni_quant_kernel(Dtype d) {
  if (d == Dtype::q8_0) return blocks<Dtype::q8_0>;
  if (d == Dtype::q4_0) return blocks<Dtype::q4_0>;
  return nullptr;
}

}  // namespace specd::kernels::detail
