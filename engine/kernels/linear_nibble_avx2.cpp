// AVX2 kernels of the nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; compiled with
// -mavx2 -mfma -mf16c), hand-written because no packaged library runs llama.cpp's blocks
// in specd's weight-stationary layout. Each 32-byte half of a quant vector (8 outputs x 4
// inputs) is unpacked once, nibble and high bits, and multiplied into every row of the
// tile: vpmaddubsw (unsigned quants times the row's int8 activations, broadcast) into
// int16 pairs, then vpmaddwd by the lanes' sub-block scales into int32, so a whole
// super-block's S = sum sc * q * x stays an exact integer, as the reference kernel's.
// The offset's sum Mn is one vpmaddwd per two sub-blocks of the lanes' mins against the
// row's activation sums (KernelCall::x_sums). The float chain is the reference's: the
// same bits whatever the rows, tiles and threads.
//
// int16 bounds (activations |x| <= 127): a pair is at most 2 x 15 x 127 = 3810 (4 bits),
// 7874 (5), 16002 (6), so the pairs of 8, 4 and 2 steps add up in int16 before vpmaddwd.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/nibble_format.hpp"
#include "engine/kernels/tile_dispatch.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;
constexpr int kRows = 8;

// Steps of 4 inputs whose int16 pairs add up without overflow.
constexpr int flush_steps(int bits) { return bits == 6 ? 2 : 4; }

// The 8 lanes' bytes at p as int16 pairs (b, b) a lane: the vpmaddwd operand that
// multiplies both int16 pairs of a lane's dword by its scale.
template <bool Signed>
inline __m256i duplicated_pairs(const std::byte* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i twice = _mm_unpacklo_epi8(v, v);
  return Signed ? _mm256_cvtepi8_epi16(twice) : _mm256_cvtepu8_epi16(twice);
}

// The 8 lanes' bytes at a and b as int16 pairs (a, b) a lane.
template <bool Signed>
inline __m256i interleaved_pairs(const std::byte* a, const std::byte* b) {
  const __m128i v = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  return Signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

// Step s of a group half (q: the group's bytes of this 8-lane half): the unsigned quants
// of inputs 4s..4s+3 (part 0) or 16 + 4s.. (part 1), nibble and high bits joined.
template <int Bits>
inline __m256i step_quants(const std::byte* q, int part, int s) {
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

// Adds to s[r] the group's sum over inputs of sc * q * x for R rows (xg: the group's 8
// quads of row r0 at xg[k * m]).
template <Dtype D, int R>
inline void group_sums(const std::byte* q, const int32_t* xg, int64_t m, __m256i sc_lo, __m256i sc_hi,
                       __m256i (&s)[R]) {
  constexpr NibbleLayout L = nibble_layout(D);
  constexpr int kFlush = flush_steps(L.bits);
  __m256i pairs[R];
#pragma GCC unroll 2
  for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 4
    for (int step = 0; step < 4; ++step) {
      const __m256i w = step_quants<L.bits>(q, part, step);
      // 4 bits: both parts in one int16 sum (one scale); else flush every kFlush steps.
      const bool first = L.bits == 4 ? part == 0 && step == 0 : step % kFlush == 0;
      const bool last = L.bits == 4 ? part == 1 && step == 3 : (step + 1) % kFlush == 0;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i p = _mm256_maddubs_epi16(w, _mm256_set1_epi32(xg[(part * 4 + step) * m + r]));
        pairs[r] = first ? p : _mm256_add_epi16(pairs[r], p);
      }
      if (last) {
        const __m256i sc = part ? sc_hi : sc_lo;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(pairs[r], sc));
      }
    }
  }
}

// R rows over NV blocks: at one and two rows several blocks' quant streams are in flight
// a thread, as the Q4_0 kernel's tiles (linear_quant_ymm.hpp).
template <Dtype D, int R, int NV>
void tile(const KernelCall& c, int64_t b0, int64_t r0) {
  constexpr NibbleLayout L = nibble_layout(D);
  const auto* x = static_cast<const int32_t*>(c.x) + r0;
  const int64_t m = c.m, superblocks = c.w->in() / L.inputs;
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
          const std::byte* group = chunk + g * L.group_bytes();
          if (h == 0) {
#pragma GCC unroll 6
            for (int l = 0; l < L.group_bytes() / 64; ++l) prefetch_ahead(group + l * 64);
          }
          __m256i sc_lo, sc_hi;
          if constexpr (L.sub_scales == 0) {
            sc_lo = sc_hi = _mm256_set1_epi16(1);
          } else if constexpr (L.sub_scales == 8) {
            sc_lo = sc_hi = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * g + 8 * h);
          } else {
            sc_lo = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * (2 * g) + 8 * h);
            sc_hi = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * (2 * g + 1) + 8 * h);
          }
          group_sums<D, R>(group + 32 * h, xt + g * 8 * m, m, sc_lo, sc_hi, s[v]);
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
            lanes = interleaved_pairs<false>(chunk + L.mins_at() + 16 * (2 * p) + 8 * h,
                                             chunk + L.mins_at() + 16 * (2 * p + 1) + 8 * h);
          } else if constexpr (L.offset == NibbleOffset::scales_x32) {
            lanes = interleaved_pairs<true>(chunk + L.scales_at() + 16 * (2 * p) + 8 * h,
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

// Blocks a tile: 4 at one row, 2 at two (more quant streams in flight a thread).
constexpr int tile_blocks(int rows) { return rows == 1 ? 4 : rows == 2 ? 2 : 1; }

template <Dtype D>
void blocks(const KernelCall& c, int64_t b_begin, int64_t b_end) {
  row_chunks_per_l2_group<kRows, tile_blocks>(c, b_begin, b_end, []<int R, int NV>() { return tile<D, R, NV>; });
}

}  // namespace

BlockKernel avx2_nibble_kernel(Dtype d) {
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
