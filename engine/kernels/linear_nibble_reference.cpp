// The portable kernel of the nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), the one
// the tests hold the vector kernels to. Per output and super-block it forms the exact
// integers S (sub-block scale times quant times activation quant) and Mn (the offset's
// share) from the packed quants and the row's int8 activations, then the float chain of
// linear_isa.hpp in super-block order. It reads the activation quants, never x_sums, so
// the vector kernels' use of the precomputed sums is checked against it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/nibble_format.hpp"

namespace specd::kernels::detail {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

float half_float(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

int32_t scale_byte(const NibbleLayout& L, const std::byte* chunk, int k, int64_t lane) {
  const auto b = std::to_integer<uint8_t>(chunk[L.scales_at() + 16 * k + lane]);
  return L.signed_scales ? static_cast<int8_t>(b) : b;
}

// Output (b * 16 + lane) of row r over super-block t: acc after its float steps.
float superblock_step(const KernelCall& c, const NibbleLayout& L, int64_t b, int64_t lane, int64_t r, int64_t t,
                      float acc) {
  const PackedWeight& w = *c.w;
  const auto* x = static_cast<const int8_t*>(c.x);  // byte 4 * (k * m + r) + j: input 4k + j of row r
  const std::byte* chunk = w.block(b) + t * L.chunk_bytes();
  const int64_t o = b * kB + lane;
  int32_t s = 0, mn = 0;
  for (int sub = 0; sub < L.inputs / L.sum_inputs(); ++sub) {
    int32_t dot = 0, xsum = 0;
    for (int k = sub * L.sum_inputs(); k < (sub + 1) * L.sum_inputs(); ++k) {
      const int64_t i = t * L.inputs + k;
      const int32_t xq = x[4 * ((i / 4) * c.m + r) + i % 4];
      dot += w.quant_at(o, i) * xq;
      xsum += xq;
    }
    const int32_t sc =
        L.sub_scales > 0 ? scale_byte(L, chunk, sub * L.sub_scales * L.sum_inputs() / L.inputs, lane) : 1;
    s += sc * dot;
    switch (L.offset) {
      case NibbleOffset::group_mins:
        mn += std::to_integer<uint8_t>(chunk[L.mins_at() + 16 * sub + lane]) * xsum;
        break;
      case NibbleOffset::one:
        mn += xsum;
        break;
      case NibbleOffset::sixteen:
        mn += 16 * xsum;
        break;
      case NibbleOffset::scales_x32:
        mn += 32 * sc * xsum;
        break;
    }
  }
  const float dx = c.x_scale[t * c.m + r], d = half_float(chunk + L.d_at() + 2 * lane);
  if (L.folded()) return std::fma(static_cast<float>(s - mn), d * dx, acc);
  acc = std::fma(static_cast<float>(s), d * dx, acc);
  return std::fma(static_cast<float>(mn), half_float(chunk + L.ms_at() + 2 * lane) * dx, acc);
}

template <Dtype D>
void reference_nibble_blocks(const KernelCall& c, int64_t block_begin, int64_t block_end) {
  constexpr NibbleLayout L = nibble_layout(D);
  const PackedWeight& w = *c.w;
  const int64_t superblocks = w.in() / L.inputs;
  for (int64_t b = block_begin; b < block_end; ++b) {
    const int64_t lanes = std::min(kB, w.out() - b * kB);
    for (int64_t r = 0; r < c.m; ++r) {
      float acc[kB] = {};
      for (int64_t lane = 0; lane < lanes; ++lane) {
        for (int64_t t = 0; t < superblocks; ++t) acc[lane] = superblock_step(c, L, b, lane, r, t, acc[lane]);
      }
      std::memcpy(c.y + r * w.out() + b * kB, acc, lanes * sizeof(float));
    }
  }
}

}  // namespace

BlockKernel reference_nibble_kernel(Dtype d) {
  switch (d) {
    case Dtype::q4_1:
      return reference_nibble_blocks<Dtype::q4_1>;
    case Dtype::q5_0:
      return reference_nibble_blocks<Dtype::q5_0>;
    case Dtype::q5_1:
      return reference_nibble_blocks<Dtype::q5_1>;
    case Dtype::q4_k:
      return reference_nibble_blocks<Dtype::q4_k>;
    case Dtype::q5_k:
      return reference_nibble_blocks<Dtype::q5_k>;
    case Dtype::q6_k:
      return reference_nibble_blocks<Dtype::q6_k>;
    default:
      return nullptr;
  }
}

}  // namespace specd::kernels::detail
