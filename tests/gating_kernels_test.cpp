// silu_gate on every tier this CPU has: against a float64 silu(g) * u, the vector tiers
// equal to each other bit for bit, and an element's result the same whatever n and
// position (the tail goes through the vector path too).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/kernels/gating.hpp"
#include "tests/support/kernel_inputs.hpp"

using namespace specd::kernels;
using namespace specd::testing;

namespace {

// Gates over the range where silu changes shape and past where exp(-g) overflows or
// vanishes in float; ups of both signs.
void inputs(int64_t n, std::vector<float>& gate, std::vector<float>& up) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> wide(-30, 30), u(-4, 4);
  gate.resize(n);
  up.resize(n);
  const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 88.0f, -88.0f, 100.0f, -100.0f, 1e-6f, -1e-6f, 20.0f, -20.0f};
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = i < 12 ? special[i] : wide(gen);
    up[i] = u(gen);
  }
}

}  // namespace

TEST_CASE("silu_gate is within 16 float ulps of the float64 silu(g) * u on every tier") {
  for (int64_t n : {1, 7, 8, 9, 40, 8195}) {
    std::vector<float> gate, up;
    inputs(n, gate, up);
    for (Isa isa : isas_here()) {
      CAPTURE(isa_name(isa));
      CAPTURE(n);
      std::vector<float> y = gate;
      silu_gate(y.data(), up.data(), n, isa);
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i], exact = g / (1.0 + std::exp(-g)) * up[i];
        // Relative, with a floor for results below float's normal range (g << 0).
        if (!(std::fabs(y[i] - exact) <= 16 * std::ldexp(1.0, -24) * std::fabs(exact) + 1e-37)) ++bad;
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("silu_gate gives an element the same bits whatever n, its position and the tier above reference") {
  std::vector<float> gate, up;
  inputs(8195, gate, up);
  const std::vector<Isa> tiers = isas_here();
  std::vector<float> first;
  for (Isa isa : tiers) {
    if (isa == Isa::reference) continue;
    CAPTURE(isa_name(isa));
    std::vector<float> whole = gate;
    silu_gate(whole.data(), up.data(), 8195, isa);
    int64_t moved = 0;
    for (int64_t i : {0, 5, 7, 8, 13, 8190, 8194}) {
      float alone = gate[i];
      silu_gate(&alone, &up[i], 1, isa);  // in a tail of one
      if (!same_bits(&alone, &whole[i], 1)) ++moved;
    }
    CHECK(moved == 0);
    if (first.empty()) {
      first = whole;
    } else {
      CHECK(same_bits(whole.data(), first.data(), 8195));
    }
  }
}

TEST_CASE("silu_gate on the default tier is silu_gate on best_isa()") {
  std::vector<float> gate, up;
  inputs(40, gate, up);
  std::vector<float> a = gate, b = gate;
  silu_gate(a.data(), up.data(), 40);
  silu_gate(b.data(), up.data(), 40, best_isa());
  CHECK(same_bits(a.data(), b.data(), 40));
}
