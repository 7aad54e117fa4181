// AVX2 kernels of the block formats (compiled with -mavx2 -mfma -mf16c), on the ymm tile
// of linear_quant_ymm.hpp. vpmaddubsw multiplies unsigned by signed bytes into saturating
// int16 pairs, so:
// - Q8_0 as ggml does: |w| times x with w's sign (vpsignb), w = stored ^ 0x80 the signed
//   quant; at most 2 x 128 x 127 a pair, no saturation (w = -128 too: vpabsb gives 128);
// - Q4_0: the unsigned nibbles times x (at most 2 x 15 x 127), the offset 8 taken out by
//   group_start; the low and high nibbles' pairs added in int16 (at most 7620 a step).
// vpmaddwd by ones sums the pairs to int32.
#include "engine/kernels/linear_quant_ymm.hpp"

namespace specd::kernels::detail {

namespace {

// One half at a time: the int16 pairs of both halves for 8 rows would not fit 16 registers.
struct MaddubsSums {
  static constexpr int kHalves = 1;

  // The int32 sums of half h's 8 outputs, starting at group_start (Q4_0) or 0 (Q8_0,
  // whose signed quants need no offset).
  template <Dtype D, int R>
  static void sums(const KernelCall& c, const std::byte* q, const int32_t* xg, int64_t g, int64_t r0, int h,
                   __m256i (&sum)[R][kHalves]) {
    const int64_t m = c.m;
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (D == Dtype::q8_0) {
      const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) sum[r][0] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        if (h == 0) prefetch_ahead(q + s * 64);
        const __m256i w =
            _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32)), bias);
        const __m256i aw = _mm256_abs_epi8(w);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i pairs = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(_mm256_set1_epi32(xg[s * m + r]), w));
          sum[r][0] = _mm256_add_epi32(sum[r][0], _mm256_madd_epi16(pairs, ones));
        }
      }
    } else {
      // All four steps' pairs add up in int16 (at most 4 x 7620 = 30480) before one vpmaddwd.
      const __m256i low4 = _mm256_set1_epi8(0x0f);
      __m256i pairs[R];
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        if (h == 0) prefetch_ahead(q + s * 64);
        const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + h * 32));
        const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i step = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(xg[s * m + r])),
                                                _mm256_maddubs_epi16(hi, _mm256_set1_epi32(xg[(s + 4) * m + r])));
          pairs[r] = s == 0 ? step : _mm256_add_epi16(pairs[r], step);
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        sum[r][0] =
            _mm256_add_epi32(_mm256_set1_epi32(c.group_start[g * m + r0 + r]), _mm256_madd_epi16(pairs[r], ones));
      }
    }
  }
};

}  // namespace

BlockKernel avx2_quant_kernel(Dtype d) { return ymm_quant_kernel<MaddubsSums>(d); }

}  // namespace specd::kernels::detail
