// The portable kernel of the block formats (Q8_0, Q4_0), and the one the tests hold the
// vector kernels to: per output and 32-input group, the exact integer sum of weight
// quants times activation quants, then acc = fma(float(sum), d_w * d_x, acc) over the
// groups in order, as the vector kernels do: they must match it bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

template <Dtype D>
void reference_quant_blocks(const KernelCall& c, int64_t block_begin, int64_t block_end) {
  const PackedWeight& w = *c.w;
  const auto* x = static_cast<const int8_t*>(c.x);  // byte 4 * (k * m + r) + j: input 4k + j of row r
  // The unsigned quant as stored (Q8_0 q + 128, Q4_0 the nibble); group_start holds the
  // offset's share of the sum.
  const int32_t stored_offset = D == Dtype::q8_0 ? 128 : 0;
  const int64_t groups = w.in() / kQuantGroup;
  for (int64_t b = block_begin; b < block_end; ++b) {
    const int64_t lanes = std::min(kB, w.out() - b * kB);
    for (int64_t r = 0; r < c.m; ++r) {
      float acc[kB] = {};
      for (int64_t o = 0; o < lanes; ++o) {
        for (int64_t g = 0; g < groups; ++g) {
          int32_t sum = c.group_start[g * c.m + r];
          for (int64_t i = g * kQuantGroup; i < (g + 1) * kQuantGroup; ++i) {
            sum += (w.quant_at(b * kB + o, i) + stored_offset) * x[4 * ((i / 4) * c.m + r) + i % 4];
          }
          const float scale = w.scale_at(b * kB + o, g * kQuantGroup) * c.x_scale[g * c.m + r];
          acc[o] = std::fma(static_cast<float>(sum), scale, acc[o]);
        }
      }
      std::memcpy(c.y + r * w.out() + b * kB, acc, lanes * sizeof(float));
    }
  }
}

}  // namespace

BlockKernel reference_quant_kernel(Dtype d) {
  if (d == Dtype::q8_0) return reference_quant_blocks<Dtype::q8_0>;
  if (d == Dtype::q4_0) return reference_quant_blocks<Dtype::q4_0>;
  return nullptr;
}

}  // namespace specd::kernels::detail
