// AVX-VNNI kernels of the nibble formats (compiled with -mavx2 -mfma -mf16c -mavxvnni) on
// the ymm tile of linear_nibble_ymm.hpp, for CPUs with AVX-VNNI but no AVX-512:
// vpdpbusd multiplies 32 unsigned quants by the row's four int8 activations, broadcast,
// into each lane's int32 sum over a sub-block (one instruction where AVX2 needs
// vpmaddubsw and an add), and one vpmulld by the lanes' sub-block scales adds it to S.
// Hand-written as the AVX2 tier (no packaged library runs these blocks).
#include "engine/kernels/linear_nibble_ymm.hpp"

namespace specd::kernels::detail {

namespace {

// The 8 lanes' scale bytes at p as int32.
template <bool Signed>
inline __m256i lane_ints(const std::byte* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return Signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

struct DpbusdSums {
  template <Dtype D, int R>
  static void group_sums(const std::byte* chunk, int g, int h, const int32_t* xg, int64_t m, __m256i (&s)[R]) {
    constexpr NibbleLayout L = nibble_layout(D);
    constexpr int kSums = L.sub_scales == 16 ? 2 : 1;  // Q6_K: inputs 0..15 and 16..31 have their own scale
    const std::byte* q = chunk + g * L.group_bytes() + 32 * h;
    __m256i part_sum[kSums][R];
#pragma GCC unroll 2
    for (int part = 0; part < 2; ++part) {
      const int k = kSums == 2 ? part : 0;
#pragma GCC unroll 4
      for (int step = 0; step < 4; ++step) {
        const __m256i w = nibble_step_quants<DpbusdSums, L.bits>(q, part, step);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i xb = _mm256_set1_epi32(xg[(part * 4 + step) * m + r]);
          const __m256i start = (step == 0 && (part == 0 || kSums == 2)) ? _mm256_setzero_si256() : part_sum[k][r];
          part_sum[k][r] = _mm256_dpbusd_avx_epi32(start, w, xb);
        }
      }
    }
#pragma GCC unroll 2
    for (int k = 0; k < kSums; ++k) {
      if constexpr (L.sub_scales == 0) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], part_sum[k][r]);
      } else {
        const int sub = L.sub_scales == 16 ? 2 * g + k : g;
        const __m256i sc = lane_ints<L.signed_scales>(chunk + L.scales_at() + 16 * sub + 8 * h);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], _mm256_mullo_epi32(part_sum[k][r], sc));
      }
    }
  }
};

}  // namespace

BlockKernel avx2vnni_nibble_kernel(Dtype d) { return nibble_ymm_kernel<DpbusdSums>(d); }

}  // namespace specd::kernels::detail
