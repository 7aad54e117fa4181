// silu_gate on AVX2 (compiled with -mavx2): glibc's libmvec expf, 8 lanes, about 5x the
// scalar loop with std::exp (BENCHMARKS.md, "AVX2 Q4_K_M: the activations' preparation,
// the MLP's gating"). The tail goes through the same vector call from a padded copy, so
// every element is computed one way.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// The x86_64 vector function ABI's name for expf on 8 floats in a ymm (AVX2), exported by
// libmvec; math.h declares it only under -ffast-math or OpenMP SIMD.
extern "C" __m256 _ZGVdN8v_expf(__m256 x);

namespace specd::kernels::detail {

namespace {

inline __m256 silu_times(__m256 g, __m256 u) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u);
}

}  // namespace

void silu_gate_avx2(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(gate + i, silu_times(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i == n) return;
  alignas(32) float g[8] = {}, u[8] = {};
  std::memcpy(g, gate + i, (n - i) * sizeof(float));
  std::memcpy(u, up + i, (n - i) * sizeof(float));
  _mm256_store_ps(g, silu_times(_mm256_load_ps(g), _mm256_load_ps(u)));
  std::memcpy(gate + i, g, (n - i) * sizeof(float));
}

}  // namespace specd::kernels::detail
