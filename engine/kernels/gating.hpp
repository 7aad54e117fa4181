#pragma once
// The MLP's gating, silu(gate) * up, element by element: 1.2M exponentials a token on the
// 3B-shaped model, five times that in a 5-row verify pass. Each element's result depends
// only on its own inputs (never on n or its position), so a row comes out the same bits
// whatever rows share the call. The vector tiers use glibc's vector expf (libmvec, at most
// a few ulp from expf), so they agree with the reference within that, not bit for bit.
#include <cstdint>

#include "engine/kernels/linear.hpp"

namespace specd::kernels {

// gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i in [0, n).
void silu_gate(float* gate, const float* up, int64_t n);

// The same on an explicit tier (tests); throws std::invalid_argument when this CPU lacks it.
void silu_gate(float* gate, const float* up, int64_t n, Isa isa);

}  // namespace specd::kernels
