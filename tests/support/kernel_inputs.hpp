#pragma once
// Inputs and output comparisons shared by the linear kernel tests (linear_kernels_test,
// quant_kernels_test): seeded random values, the ISAs this CPU has, one linear() call
// into a NaN-filled output, and bit-for-bit equality.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/linear.hpp"

namespace specd::testing {

struct Shape {
  int64_t in, out;
};

// n values uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(gen);
  return v;
}

inline std::vector<kernels::Isa> isas_here() {
  std::vector<kernels::Isa> v;
  for (kernels::Isa isa : {kernels::Isa::reference, kernels::Isa::avx2, kernels::Isa::avx2vnni, kernels::Isa::avx512f,
                           kernels::Isa::avx512bf16}) {
    if (kernels::isa_supported(isa)) v.push_back(isa);
  }
  return v;
}

// m rows of x through w on isa; an output the kernel does not write stays NaN.
inline std::vector<float> run(const kernels::PackedWeight& w, const float* x, int64_t m, kernels::Isa isa,
                              kernels::KernelThreads* threads = nullptr) {
  std::vector<float> y(m * w.out(), std::nanf(""));
  kernels::linear(w, x, m, y.data(), isa, threads);
  return y;
}

inline bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace specd::testing
