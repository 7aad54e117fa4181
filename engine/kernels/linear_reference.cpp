// The portable kernel, and the one the tests hold the vector kernels to: each output is
// one std::fma chain over the inputs in order, exactly the order and rounding of the
// AVX2 and AVX-512F kernels, so those must match it bit for bit.
#include <cmath>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

float stored(Dtype d, const std::byte* p) {
  uint16_t h;
  switch (d) {
    case Dtype::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case Dtype::f16:
      std::memcpy(&h, p, 2);
      return f16_to_float(h);
    case Dtype::bf16:
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    default:
      break;
  }
  return 0;
}

template <Dtype D>
void reference_blocks(const KernelCall& c, int64_t block_begin, int64_t block_end) {
  const PackedWeight& w = *c.w;
  const size_t es = dtype_size(D);
  const auto* x = static_cast<const float*>(c.x);
  // BF16 runs over the padded pair too (its x and weight are zero), as the vector kernels do.
  const int64_t steps = D == Dtype::bf16 ? (w.in() + 1) / 2 * 2 : w.in();
  for (int64_t b = block_begin; b < block_end; ++b) {
    const std::byte* blk = w.block(b);
    const int64_t lanes = std::min(kB, w.out() - b * kB);
    for (int64_t r = 0; r < c.m; ++r) {
      float acc[kB] = {};
      for (int64_t i = 0; i < steps; ++i) {
        for (int64_t o = 0; o < kB; ++o) {
          const int64_t off = D == Dtype::bf16 ? (i / 2) * 32 + o * 2 + (i % 2) : i * kB + o;
          acc[o] = std::fma(x[i * c.m + r], stored(D, blk + off * es), acc[o]);
        }
      }
      std::memcpy(c.y + r * w.out() + b * kB, acc, lanes * sizeof(float));
    }
  }
}

}  // namespace

BlockKernel reference_kernel(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return reference_blocks<Dtype::f32>;
    case Dtype::f16:
      return reference_blocks<Dtype::f16>;
    case Dtype::bf16:
      return reference_blocks<Dtype::bf16>;
    default:  // the block formats have their own kernels (linear_quant_*.cpp, linear_nibble_*.cpp)
      break;
  }
  return nullptr;
}

}  // namespace specd::kernels::detail
