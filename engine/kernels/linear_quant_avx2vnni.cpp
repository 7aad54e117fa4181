// AVX-VNNI kernels of the block formats (compiled with -mavx2 -mfma -mf16c -mavxvnni),
// on the ymm tile of linear_quant_ymm.hpp: for CPUs with AVX2 and AVX-VNNI but no
// AVX-512 (Intel client cores from Alder Lake, Intel's E-core servers). vpdpbusd on ymm
// multiplies 32 unsigned weight quants by the row's four int8 activations, broadcast,
// into 8 int32 sums, starting at group_start as the AVX-512 tier does: one instruction
// per 32 products where the AVX2 kernel needs three or four (vpmaddubsw, vpaddw or
// vpsignb and vpmaddwd, vpaddd), which is what bounds a verify pass of several rows there
// (BENCHMARKS.md, "Quantized weights on an Intel host, and the AVX-VNNI tier").
#include "engine/kernels/linear_quant_ymm.hpp"

namespace specd::kernels::detail {

namespace {

// Both halves at once: each row's broadcast inputs serve 2 vpdpbusd, not 1. A 5-row
// int4 pass cost 1.48-1.64 decode steps this way against 1.68-1.75 one half at a time
// (BENCHMARKS.md, same section).
struct DpbusdSums {
  static constexpr int kHalves = 2;

  template <Dtype D, int R>
  static void sums(const KernelCall& c, const std::byte* q, const int32_t* xg, int64_t g, int64_t r0, int /*h0*/,
                   __m256i (&sum)[R][kHalves]) {
    const int64_t m = c.m;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) sum[r][0] = sum[r][1] = _mm256_set1_epi32(c.group_start[g * m + r0 + r]);
    if constexpr (D == Dtype::q8_0) {
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        prefetch_ahead(q + s * 64);
        const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64));
        const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + 32));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i xb = _mm256_set1_epi32(xg[s * m + r]);
          sum[r][0] = _mm256_dpbusd_avx_epi32(sum[r][0], w0, xb);
          sum[r][1] = _mm256_dpbusd_avx_epi32(sum[r][1], w1, xb);
        }
      }
    } else {
      const __m256i low4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {  // low nibbles: inputs 4s..4s+3, high: 16 + 4s..
        prefetch_ahead(q + s * 64);
        const __m256i raw0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64));
        const __m256i raw1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + s * 64 + 32));
        const __m256i lo0 = _mm256_and_si256(raw0, low4), hi0 = _mm256_and_si256(_mm256_srli_epi16(raw0, 4), low4);
        const __m256i lo1 = _mm256_and_si256(raw1, low4), hi1 = _mm256_and_si256(_mm256_srli_epi16(raw1, 4), low4);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i xlo = _mm256_set1_epi32(xg[s * m + r]), xhi = _mm256_set1_epi32(xg[(s + 4) * m + r]);
          sum[r][0] = _mm256_dpbusd_avx_epi32(sum[r][0], lo0, xlo);
          sum[r][1] = _mm256_dpbusd_avx_epi32(sum[r][1], lo1, xlo);
          sum[r][0] = _mm256_dpbusd_avx_epi32(sum[r][0], hi0, xhi);
          sum[r][1] = _mm256_dpbusd_avx_epi32(sum[r][1], hi1, xhi);
        }
      }
    }
  }
};

}  // namespace

BlockKernel avx2vnni_quant_kernel(Dtype d) { return ymm_quant_kernel<DpbusdSums>(d); }

}  // namespace specd::kernels::detail
