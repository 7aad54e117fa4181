#pragma once
// Internal to engine/kernels: the ymm tile of the nibble formats (nibble_format.hpp),
// shared by the AVX2 tier (linear_nibble_avx2.cpp: vpmaddubsw, vpmaddwd by the scales)
// and the AVX-VNNI tier (linear_nibble_avx2vnni.cpp: vpdpbusd, vpmulld by the scales).
// Each of those translation units has its own -m flags, and every template here takes
// that file's own `Sums` (declared in its anonymous namespace), so no instantiation is
// shared between the two ISAs at link time (as linear_quant_ymm.hpp).
//
// A block of 16 outputs is two ymm halves (bytes 0..31 and 32..63 of each 64-byte quant
// vector). A tile runs R rows over NV blocks, a super-block at a time: per half, each
// group's quants are unpacked once for all R rows (Sums::group_sums adds the group's
// exact sc * q * x to S), then the offset's sum Mn is one vpmaddwd per two sub-blocks of
// the lanes' mins against the row's activation sums (KernelCall::x_sums), and the float
// chain is the reference kernel's: the same bits whatever the rows, tiles and threads.
//
// `Sums::group_sums<D, R>(chunk, g, h, xg, m, s)` adds group g's sums of half h for R
// rows to s; xg holds the group's 8 input quads of the tile's first row at xg[k * m].
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/nibble_format.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

// Step s of a group half (q: the group's bytes of this 8-lane half): the unsigned quants
// of inputs 4s..4s+3 (part 0) or 16 + 4s.. (part 1), nibble and high bits joined.
template <class Sums, int Bits>
inline __m256i nibble_step_quants(const std::byte* q, int part, int s) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + s * 64));
  __m256i w = part ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4) : _mm256_and_si256(raw, low4);
  if constexpr (Bits == 5) {  // bit s (part 0) or 4 + s (part 1) to bit 4; shifts stay inside each byte
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 256));
    const __m256i at4 = part ? _mm256_srli_epi16(hb, s) : _mm256_slli_epi16(hb, 4 - s);
    w = _mm256_or_si256(w, _mm256_and_si256(at4, _mm256_set1_epi8(0x10)));
  } else if constexpr (Bits == 6) {  // bits 2s, 2s + 1 to bits 4, 5
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (part ? 320 : 256)));
    const __m256i at4 = s < 2 ? _mm256_slli_epi16(hb, 4 - 2 * s) : s == 2 ? hb : _mm256_srli_epi16(hb, 2);
    w = _mm256_or_si256(w, _mm256_and_si256(at4, _mm256_set1_epi8(0x30)));
  }
  return w;
}

// The 8 lanes' bytes at a and b as int16 pairs (a, b) a lane.
template <class Sums, bool Signed>
inline __m256i nibble_interleaved_pairs(const std::byte* a, const std::byte* b) {
  const __m128i v = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  return Signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

// R rows over NV blocks: at one and two rows two blocks' quant streams are in flight a
// thread, as the Q4_0 kernel's tiles (linear_quant_ymm.hpp).
template <class Sums, Dtype D, int R, int NV>
void nibble_ymm_tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr NibbleLayout L = nibble_layout(D);
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, superblocks = c.w->in() / L.inputs;
  const TileStreams streams{c.w->block_bytes(), NV};
  __m256 acc[NV][R][2];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[v][r][0] = acc[v][r][1] = _mm256_setzero_ps();
  }
  for (int64_t t = 0; t < superblocks; ++t) {
    const int32_t* xt = x + t * (L.inputs / 4) * m;
    for (int h = 0; h < 2; ++h) {
      __m256i s[NV][R], mn[NV][R];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[v][r] = mn[v][r] = _mm256_setzero_si256();
      }
      for (int g = 0; g < L.groups(); ++g) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          const std::byte* chunk = c.w->block(b0 + v) + t * L.chunk_bytes();
          // Half the group's lines in each pass (h = 0, 1), so requests go out evenly: all
          // of them in the first pass ran 11-15% slower at one row (BENCHMARKS.md, 2026-11-29).
          constexpr int kLines = L.group_bytes() / 64;
#pragma GCC unroll 6
          for (int l = h * kLines / 2; l < (h + 1) * kLines / 2; ++l) {
            streams.prefetch(c.w->block(b0 + v), chunk + g * L.group_bytes() + l * 64, L.prefetch_ahead());
          }
          Sums::template group_sums<D, R>(chunk, g, h, xt + g * 8 * m, m, s[v]);
        }
      }
      const int32_t* sums = c.x_sums + t * L.sum_pairs() * m + r0;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const std::byte* chunk = c.w->block(b0 + v) + t * L.chunk_bytes();
#pragma GCC unroll 8
        for (int p = 0; p < L.sum_pairs(); ++p) {
          __m256i lanes;
          if constexpr (L.offset == NibbleOffset::group_mins) {
            lanes = nibble_interleaved_pairs<Sums, false>(chunk + L.mins_at() + 16 * (2 * p) + 8 * h,
                                                          chunk + L.mins_at() + 16 * (2 * p + 1) + 8 * h);
          } else if constexpr (L.offset == NibbleOffset::scales_x32) {
            lanes = nibble_interleaved_pairs<Sums, true>(chunk + L.scales_at() + 16 * (2 * p) + 8 * h,
                                                         chunk + L.scales_at() + 16 * (2 * p + 1) + 8 * h);
          } else {
            lanes = _mm256_set1_epi32(L.offset_constant());  // int16 pairs (c, 0) against (sum, 0)
          }
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            mn[v][r] = _mm256_add_epi32(mn[v][r], _mm256_madd_epi16(lanes, _mm256_set1_epi32(sums[p * m + r])));
          }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(chunk + L.d_at() + 16 * h)));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256 dx = _mm256_set1_ps(c.x_scale[t * m + r0 + r]);
          if constexpr (L.folded()) {
            const __m256i n = L.offset == NibbleOffset::scales_x32 ? _mm256_slli_epi32(mn[v][r], 5) : mn[v][r];
            acc[v][r][h] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(s[v][r], n)), _mm256_mul_ps(d, dx), acc[v][r][h]);
          } else {
            const __m256 ms =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(chunk + L.ms_at() + 16 * h)));
            acc[v][r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[v][r]), _mm256_mul_ps(d, dx), acc[v][r][h]);
            acc[v][r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mn[v][r]), _mm256_mul_ps(ms, dx), acc[v][r][h]);
          }
        }
      }
    }
  }
  const int64_t out = c.w->out();
  constexpr int64_t kB = PackedWeight::kBlock;
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t o0 = (b0 + v) * kB, lanes = std::min(kB, out - o0);
    for (int r = 0; r < R; ++r) {
      alignas(32) float y[kB];
      _mm256_store_ps(y, acc[v][r][0]);
      _mm256_store_ps(y + 8, acc[v][r][1]);
      std::memcpy(c.y + (r0 + r) * out + o0, y, lanes * sizeof(float));
    }
  }
}

// Blocks a tile: 2 at one and two rows (more quant streams in flight a thread, as the
// Q4_0 tile; 4 at one row spilled registers and ran 5% slower on AVX2 decode:
// BENCHMARKS.md, "K-quant decode on AVX2: two streams a tile").
constexpr int nibble_ymm_tile_blocks(int rows) { return rows <= 2 ? 2 : 1; }

template <class Sums, Dtype D>
void nibble_ymm_blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  constexpr int kRows = 8;
  row_chunks_per_l2_group<kRows, nibble_ymm_tile_blocks>(
      c, b_begin, b_end, []<int R, int NV>() { return nibble_ymm_tile<Sums, D, R, NV>; });
}

// The kernel of a nibble format for the TU's Sums; null for any other dtype.
template <class Sums>
BlockKernel nibble_ymm_kernel(Dtype d) {
  switch (d) {
    case Dtype::q4_1:
      return nibble_ymm_blocks<Sums, Dtype::q4_1>;
    case Dtype::q5_0:
      return nibble_ymm_blocks<Sums, Dtype::q5_0>;
    case Dtype::q5_1:
      return nibble_ymm_blocks<Sums, Dtype::q5_1>;
    case Dtype::q4_k:
      return nibble_ymm_blocks<Sums, Dtype::q4_k>;
    case Dtype::q5_k:
      return nibble_ymm_blocks<Sums, Dtype::q5_k>;
    case Dtype::q6_k:
      return nibble_ymm_blocks<Sums, Dtype::q6_k>;
    default:
      return nullptr;
  }
}

}  // namespace specd::kernels::detail
