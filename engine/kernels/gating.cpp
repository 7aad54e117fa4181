#include "engine/kernels/gating.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace specd::kernels {

namespace detail {
void silu_gate_avx2(float* gate, const float* up, int64_t n);
}

void silu_gate(float* gate, const float* up, int64_t n) { silu_gate(gate, up, n, best_isa()); }

void silu_gate(float* gate, const float* up, int64_t n, Isa isa) {
  if (!isa_supported(isa)) throw std::invalid_argument(std::string("kernel ISA not supported here: ") + isa_name(isa));
#if defined(SPECD_KERNELS_X86)
  // Every x86 tier has AVX2 (isa_supported): one vector path, so they all agree bit for bit.
  if (isa != Isa::reference) return detail::silu_gate_avx2(gate, up, n);
#endif
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace specd::kernels
