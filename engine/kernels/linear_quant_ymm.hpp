#pragma once
// Internal to engine/kernels: the ymm tile of the block formats, shared by the AVX2 tier
// (linear_quant_avx2.cpp, vpmaddubsw) and the AVX-VNNI tier (linear_quant_avx2vnni.cpp,
// vpdpbusd on ymm). Each of those translation units has its own -m flags, and every
// template here takes that file's own `Sums` (declared in its anonymous namespace), so
// no instantiation is shared between the two ISAs at link time.
//
// A block of 16 outputs is two ymm halves (bytes 0..31 and 32..63 of each 64-byte quant
// vector). A tile runs R rows over NV blocks, one group at a time, and within a group
// Sums::kHalves halves (8 outputs each) at a time: only the R rows' int sums of those
// halves stay in registers, so one unpacking of the weights serves up to kYmmRows rows
// in 16 ymm registers. The float outputs (R x NV x 2 accumulators) spill to the stack
// beyond a few rows; a load and a store per half and group cost less than unpacking the
// weights again for every 2 rows (BENCHMARKS.md, "The AVX2 tier's block kernels"). The
// float chain is the reference kernel's: bit-identical to it.
//
// `Sums::sums<D, R>(c, q, xg, g, r0, h0, sum)` writes the int32 sums of halves h0 ..
// h0 + kHalves - 1 over group g for R rows: q is the group's quants of the block, xg
// its inputs.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

inline constexpr int kYmmRows = 8;

// Blocks per tile: more quant streams in flight per thread at one and two rows (4 and 2
// blocks ran 10-20% faster than 2 and 1 there; BENCHMARKS.md, "The AVX2 tier's block kernels").
constexpr int ymm_tile_blocks(int rows) { return rows == 1 ? 4 : rows == 2 ? 2 : 1; }

template <class Sums, Dtype D, int R, int NV>
void ymm_tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr int64_t kB = PackedWeight::kBlock;
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
      for (int h0 = 0; h0 < 2; h0 += Sums::kHalves) {
        __m256i sum[R][Sums::kHalves];
        Sums::template sums<D, R>(c, blk + g * kQuantBytes, xg, g, r0, h0, sum);
#pragma GCC unroll 2
        for (int h = h0; h < h0 + Sums::kHalves; ++h) {
          const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(scales + h));
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const __m256 dx = _mm256_set1_ps(c.x_scale[g * m + r0 + r]);
            acc[r][v][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][h - h0]), _mm256_mul_ps(dw, dx), acc[r][v][h]);
          }
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

template <class Sums, Dtype D>
void ymm_blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kYmmRows, ymm_tile_blocks>(c, b_begin, b_end,
                                                     []<int R, int NV>() { return ymm_tile<Sums, D, R, NV>; });
}

// The kernel of a block format for the TU's Sums; null for a float format.
template <class Sums>
BlockKernel ymm_quant_kernel(Dtype d) {
  if (d == Dtype::q8_0) return ymm_blocks<Sums, Dtype::q8_0>;
  if (d == Dtype::q4_0) return ymm_blocks<Sums, Dtype::q4_0>;
  return nullptr;
}

}  // namespace specd::kernels::detail
