// AVX2 kernels of the nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; compiled with
// -mavx2 -mfma -mf16c) on the ymm tile of linear_nibble_ymm.hpp, hand-written because no
// packaged library runs llama.cpp's blocks in specd's weight-stationary layout.
// vpmaddubsw multiplies the unsigned quants by the row's int8 activations, broadcast,
// into int16 pairs; vpmaddwd by the lanes' sub-block scales (as int16 pairs (sc, sc))
// sums them into int32, so a super-block's S stays an exact integer.
//
// int16 bounds (activations |x| <= 127): a pair is at most 2 x 15 x 127 = 3810 (4 bits),
// 7874 (5), 16002 (6), so the pairs of 8, 4 and 2 steps add up in int16 before vpmaddwd.
#include "engine/kernels/linear_nibble_ymm.hpp"

namespace specd::kernels::detail {

namespace {

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

struct MaddubsSums {
  template <Dtype D, int R>
  static void group_sums(const std::byte* chunk, int g, int h, const int32_t* xg, int64_t m, __m256i (&s)[R]) {
    constexpr NibbleLayout L = nibble_layout(D);
    constexpr int kFlush = flush_steps(L.bits);
    __m256i sc_lo, sc_hi;
    if constexpr (L.sub_scales == 0) {
      sc_lo = sc_hi = _mm256_set1_epi16(1);
    } else if constexpr (L.sub_scales == 8) {
      sc_lo = sc_hi = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * g + 8 * h);
    } else {
      sc_lo = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * (2 * g) + 8 * h);
      sc_hi = duplicated_pairs<L.signed_scales>(chunk + L.scales_at() + 16 * (2 * g + 1) + 8 * h);
    }
    const std::byte* q = chunk + g * L.group_bytes() + 32 * h;
    __m256i pairs[R];
#pragma GCC unroll 2
    for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 4
      for (int step = 0; step < 4; ++step) {
        const __m256i w = nibble_step_quants<MaddubsSums, L.bits>(q, part, step);
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
};

}  // namespace

BlockKernel avx2_nibble_kernel(Dtype d) { return nibble_ymm_kernel<MaddubsSums>(d); }

}  // namespace specd::kernels::detail
