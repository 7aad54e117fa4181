// AVX-512 VNNI kernels of the nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K;
// compiled with -mavx512f -mavx512bw -mavx512vnni -mf16c), hand-written as the AVX2 ones
// (no packaged library runs llama.cpp's blocks in this layout). A 64-byte quant vector
// holds all 16 outputs of a block: vpdpbusd multiplies its unsigned quants by a row's
// four int8 activations, broadcast, into each lane's int32 sum over a sub-block, and one
// vpmulld by the lanes' sub-block scales adds it to the super-block's S. Integers exact,
// then the reference's float chain: the same bits as every other tier.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/nibble_format.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 8;

// Step s of a group (q: the group's bytes): the unsigned quants of inputs 4s..4s+3 (part
// 0) or 16 + 4s.. (part 1) for the 16 lanes, nibble and high bits joined.
template <int Bits>
inline __m512i step_quants(const std::byte* q, int part, int s) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i raw = _mm512_loadu_si512(q + s * 64);
  __m512i w = part ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4) : _mm512_and_si512(raw, low4);
  if constexpr (Bits == 5) {
    const __m512i hb = _mm512_loadu_si512(q + 256);
    const __m512i at4 = part ? _mm512_srli_epi16(hb, s) : _mm512_slli_epi16(hb, 4 - s);
    w = _mm512_or_si512(w, _mm512_and_si512(at4, _mm512_set1_epi8(0x10)));
  } else if constexpr (Bits == 6) {
    const __m512i hb = _mm512_loadu_si512(q + (part ? 320 : 256));
    const __m512i at4 = s < 2 ? _mm512_slli_epi16(hb, 4 - 2 * s) : s == 2 ? hb : _mm512_srli_epi16(hb, 2);
    w = _mm512_or_si512(w, _mm512_and_si512(at4, _mm512_set1_epi8(0x30)));
  }
  return w;
}

template <bool Signed>
inline __m512i lane_ints(const std::byte* p) {  // 16 bytes, lane o at byte o, as int32
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return Signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

template <bool Signed>
inline __m512i interleaved_pairs(const std::byte* a, const std::byte* b) {  // (a_o, b_o) int16 a lane
  const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  const __m256i v = _mm256_set_m128i(_mm_unpackhi_epi8(va, vb), _mm_unpacklo_epi8(va, vb));
  return Signed ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}

// The exact S of one super-block for R rows and NV blocks (blk: the blocks, chunk: their
// chunks of this super-block, xt: its input quads of the first row at xt[k * m]).
template <Dtype D, int R, int NV>
inline void superblock_sums(const std::byte* const (&blk)[NV], const std::byte* const (&chunk)[NV],
                            const TileStreams& streams, const int32_t* xt, int64_t m, __m512i (&s)[R][NV]) {
  constexpr NibbleLayout L = nibble_layout(D);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[r][v] = _mm512_setzero_si512();
  for (int g = 0; g < L.groups(); ++g) {
    const int32_t* xg = xt + g * 8 * m;
    // One int32 sum a sub-block scale: both parts (inputs 0..15, 16..31) share one
    // except in Q6_K.
    constexpr int kSums = L.sub_scales == 16 ? 2 : 1;
    __m512i part_sum[kSums][R][NV];
#pragma GCC unroll 2
    for (int part = 0; part < 2; ++part) {
      const int k = kSums == 2 ? part : 0;
#pragma GCC unroll 4
      for (int step = 0; step < 4; ++step) {
        __m512i w[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          const std::byte* group = chunk[v] + g * L.group_bytes();
          // The group's lines spread over its 8 steps, so requests go out evenly (as the ymm tile).
          constexpr int kLines = L.group_bytes() / 64;
          const int slot = part * 4 + step, line = (slot * kLines + 7) / 8;
          if (line < kLines && line * 8 / kLines == slot) {
            streams.prefetch(blk[v], group + line * 64, L.prefetch_ahead());
          }
          w[v] = step_quants<L.bits>(group, part, step);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m512i xb = _mm512_set1_epi32(xg[(part * 4 + step) * m + r]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) {
            const bool fresh = step == 0 && (part == 0 || kSums == 2);
            part_sum[k][r][v] = _mm512_dpbusd_epi32(fresh ? _mm512_setzero_si512() : part_sum[k][r][v], w[v], xb);
          }
        }
      }
    }
#pragma GCC unroll 2
    for (int k = 0; k < kSums; ++k) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        if constexpr (L.sub_scales == 0) {
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) s[r][v] = _mm512_add_epi32(s[r][v], part_sum[k][r][v]);
        } else {
          const int sub = L.sub_scales == 16 ? 2 * g + k : g;
          const __m512i sc = lane_ints<L.signed_scales>(chunk[v] + L.scales_at() + 16 * sub);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) s[r][v] = _mm512_add_epi32(s[r][v], _mm512_mullo_epi32(part_sum[k][r][v], sc));
        }
      }
    }
  }
}

// Q4_K's S at one row (decode), the same integer in fewer operations per byte: the decode
// tile is bound by its vector ports, not by memory alone (BENCHMARKS.md, "K-quant decode:
// one-row sums and prefetch distance"). Per group the low nibbles are masked in place (q)
// and so are the high ones (16 q, one AND where a shift costs a second), one vpdpbusd
// chain each (inputs 0..15, 16..31); each chain, the high one shifted down exactly, fits
// int16 (4 steps of 4 x 15 x 127 = 30480), so vpdpwssd by the lanes' scales as (sc, 0)
// pairs adds sc times it to S in one instruction where vpmulld takes two and an add.
template <int NV>
inline void q4k_row_sums(const std::byte* const (&blk)[NV], const std::byte* const (&chunk)[NV],
                         const TileStreams& streams, const int32_t* xt, int64_t m, __m512i (&s)[1][NV]) {
  constexpr NibbleLayout L = nibble_layout(Dtype::q4_k);
  const __m512i low4 = _mm512_set1_epi8(0x0f), high4 = _mm512_set1_epi8(static_cast<char>(0xf0));
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) s[0][v] = _mm512_setzero_si512();
  for (int g = 0; g < L.groups(); ++g) {
    const int32_t* xg = xt + g * 8 * m;
    __m512i lo[NV], hi16[NV];
#pragma GCC unroll 4
    for (int step = 0; step < 4; ++step) {
      const __m512i x_lo = _mm512_set1_epi32(xg[step * m]), x_hi = _mm512_set1_epi32(xg[(4 + step) * m]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const std::byte* q = chunk[v] + g * L.group_bytes() + step * 64;
        streams.prefetch(blk[v], q, L.prefetch_ahead());
        const __m512i raw = _mm512_loadu_si512(q);
        const __m512i zero = _mm512_setzero_si512();
        lo[v] = _mm512_dpbusd_epi32(step == 0 ? zero : lo[v], _mm512_and_si512(raw, low4), x_lo);
        hi16[v] = _mm512_dpbusd_epi32(step == 0 ? zero : hi16[v], _mm512_and_si512(raw, high4), x_hi);
      }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m512i sc = lane_ints<false>(chunk[v] + L.scales_at() + 16 * g);
      s[0][v] = _mm512_dpwssd_epi32(s[0][v], lo[v], sc);
      s[0][v] = _mm512_dpwssd_epi32(s[0][v], _mm512_srai_epi32(hi16[v], 4), sc);
    }
  }
}

// R rows by NV blocks of 16 outputs: each quant vector is unpacked once for the R rows,
// and the NV blocks' vpdpbusd chains are independent, so a decode row (R = 1) keeps
// several in flight instead of waiting on one chain's latency.
template <Dtype D, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr NibbleLayout L = nibble_layout(D);
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, superblocks = c.w->in() / L.inputs;
  const std::byte* blk[NV];
  const TileStreams streams{c.w->block_bytes(), NV};
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    blk[v] = c.w->block(b0 + v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t t = 0; t < superblocks; ++t) {
    const std::byte* chunk[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) chunk[v] = blk[v] + t * L.chunk_bytes();
    const int32_t* xt = x + t * (L.inputs / 4) * m;
    __m512i s[R][NV];
    if constexpr (D == Dtype::q4_k && R == 1) {
      q4k_row_sums<NV>(blk, chunk, streams, xt, m, s);
    } else {
      superblock_sums<D, R, NV>(blk, chunk, streams, xt, m, s);
    }
    const int32_t* sums = c.x_sums + t * L.sum_pairs() * m + r0;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m512i mn[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) mn[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int p = 0; p < L.sum_pairs(); ++p) {
        __m512i lanes;
        if constexpr (L.offset == NibbleOffset::group_mins) {
          lanes = interleaved_pairs<false>(chunk[v] + L.mins_at() + 16 * (2 * p),
                                           chunk[v] + L.mins_at() + 16 * (2 * p + 1));
        } else if constexpr (L.offset == NibbleOffset::scales_x32) {
          lanes = interleaved_pairs<true>(chunk[v] + L.scales_at() + 16 * (2 * p),
                                          chunk[v] + L.scales_at() + 16 * (2 * p + 1));
        } else {
          lanes = _mm512_set1_epi32(L.offset_constant());
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          mn[r] = _mm512_add_epi32(mn[r], _mm512_madd_epi16(lanes, _mm512_set1_epi32(sums[p * m + r])));
        }
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[v] + L.d_at())));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 dx = _mm512_set1_ps(c.x_scale[t * m + r0 + r]);
        if constexpr (L.folded()) {
          const __m512i n = L.offset == NibbleOffset::scales_x32 ? _mm512_slli_epi32(mn[r], 5) : mn[r];
          acc[r][v] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s[r][v], n)), _mm512_mul_ps(d, dx), acc[r][v]);
        } else {
          const __m512 ms = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[v] + L.ms_at())));
          acc[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][v]), _mm512_mul_ps(d, dx), acc[r][v]);
          acc[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mn[r]), _mm512_mul_ps(ms, dx), acc[r][v]);
        }
      }
    }
  }
  const int64_t out = c.w->out();
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t o0 = (b0 + v) * kB;
    const auto mask = static_cast<__mmask16>((1u << std::min<int64_t>(kB, out - o0)) - 1);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(c.y + (r0 + r) * out + o0, mask, acc[r][v]);
  }
}

// Blocks per tile for R rows: per row and block a sub-block sum (two in Q6_K), the
// super-block's S and the float output stay live, so NV shrinks as R grows.
constexpr int tile_blocks(int rows) { return rows <= 1 ? 4 : rows <= 5 ? 2 : 1; }

template <Dtype D>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<D, R, NV>; });
}

}  // namespace

BlockKernel avx512vnni_nibble_kernel(Dtype d) {
  switch (d) {
    case Dtype::q4_1:
      return blocks<Dtype::q4_1>;
    case Dtype::q5_0:
      return blocks<Dtype::q5_0>;
    case Dtype::q5_1:
      return blocks<Dtype::q5_1>;
    case Dtype::q4_k:
      return blocks<Dtype::q4_k>;
    case Dtype::q5_k:
      return blocks<Dtype::q5_k>;
    case Dtype::q6_k:
      return blocks<Dtype::q6_k>;
    default:
      return nullptr;
  }
}

}  // namespace specd::kernels::detail
