// The nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): llama.cpp's stored blocks
// packed as they are (every weight at() equal to a dequantization written here the way
// ggml's dequantize_row_* loops are), and the kernels of every tier this CPU has against
// a float64 product and the reference bit for bit, with rows bit-identical whatever m,
// tile and threads.
//
// Tolerance: the kernels multiply int8 activations with one scale per stored block
// (quantize_activations with its group), so the float64 product is of the dequantized
// weights and activations. Per block the integer sums are exact; a block adds at most
// four roundings (two scale products, the int to float conversion and the fma, twice
// where the offset has its own step) of its terms, and the chain over T blocks one
// rounding a block: within (T + 8) * 2^-24 * A, A = sum_i |x_i| (|scale part| + |offset part|).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/linear.hpp"
#include "tests/support/kernel_inputs.hpp"

using namespace specd::kernels;
using namespace specd::testing;

namespace {

const Dtype kFormats[] = {Dtype::q4_1, Dtype::q5_0, Dtype::q5_1, Dtype::q4_k, Dtype::q5_k, Dtype::q6_k};

bool k_quant(Dtype d) { return d == Dtype::q4_k || d == Dtype::q5_k || d == Dtype::q6_k; }

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
double half(const uint8_t* p) { return f16_to_float(u16(p)); }

// One weight as a scale part and an offset part (w = a + b); b = 0 where the offset is
// folded into the quant (Q5_0's q - 16, Q6_K's q - 32).
struct Parts {
  double a = 0, b = 0;
};

void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {  // ggml's get_scale_min_k4
  if (j < 4) {
    *sc = q[j] & 63, *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// One stored block dequantized in ggml's order (dequantize_row_q4_1 ... _q6_K).
void dequantize_block(Dtype d, const uint8_t* x, Parts* y) {
  switch (d) {
    case Dtype::q4_1:
    case Dtype::q5_1: {
      const bool five = d == Dtype::q5_1;
      const uint8_t* qs = x + (five ? 8 : 4);
      uint32_t qh = 0;
      if (five) std::memcpy(&qh, x + 4, 4);
      for (int j = 0; j < 16; ++j) {
        const int h0 = five ? ((qh >> j) << 4) & 0x10 : 0, h1 = five ? (qh >> (j + 12)) & 0x10 : 0;
        y[j] = {((qs[j] & 0x0F) | h0) * half(x), half(x + 2)};
        y[j + 16] = {((qs[j] >> 4) | h1) * half(x), half(x + 2)};
      }
      return;
    }
    case Dtype::q5_0: {
      uint32_t qh;
      std::memcpy(&qh, x + 2, 4);
      for (int j = 0; j < 16; ++j) {
        const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        y[j] = {(((x[6 + j] & 0x0F) | h0) - 16) * half(x), 0};
        y[j + 16] = {(((x[6 + j] >> 4) | h1) - 16) * half(x), 0};
      }
      return;
    }
    case Dtype::q4_k:
    case Dtype::q5_k: {
      const bool five = d == Dtype::q5_k;
      const uint8_t *q = x + (five ? 48 : 16), *qh = x + 16;
      int is = 0, u1 = 1, u2 = 2;
      for (int j = 0; j < 256; j += 64, q += 32, is += 2, u1 <<= 2, u2 <<= 2) {
        int sc, m;
        scale_min_k4(is, x + 4, &sc, &m);
        const double d1 = half(x) * sc, m1 = half(x + 2) * m;
        scale_min_k4(is + 1, x + 4, &sc, &m);
        const double d2 = half(x) * sc, m2 = half(x + 2) * m;
        for (int l = 0; l < 32; ++l) {
          y[j + l] = {d1 * ((q[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)), -m1};
          y[j + 32 + l] = {d2 * ((q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)), -m2};
        }
      }
      return;
    }
    default: {  // q6_k
      const uint8_t *ql = x, *qh = x + 128;
      const auto* sc = reinterpret_cast<const int8_t*>(x + 192);
      const double dd = half(x + 208);
      for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
          const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
          const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
          const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
          y[n + l] = {dd * sc[is + 0] * q1, 0};
          y[n + l + 32] = {dd * sc[is + 2] * q2, 0};
          y[n + l + 64] = {dd * sc[is + 4] * q3, 0};
          y[n + l + 96] = {dd * sc[is + 6] * q4, 0};
        }
      }
    }
  }
}

// Random stored blocks: every quant, scale and min bit random, the F16 scales of a
// trained model's size (d about 1e-3, the K-quants' dmin too).
std::vector<uint8_t> random_blocks(Dtype d, int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 gen(seed);
  const size_t bytes = quant_block_bytes(d);
  std::vector<uint8_t> v(out * stored_row_bytes(d, in));
  for (auto& b : v) b = static_cast<uint8_t>(gen());
  std::uniform_real_distribution<float> scale(-2e-3f, 2e-3f);
  for (size_t at = 0; at < v.size(); at += bytes) {
    uint8_t* x = v.data() + at;
    auto put = [&](uint8_t* p, float f) {
      const uint16_t h = float_to_f16(f);
      std::memcpy(p, &h, 2);
    };
    if (d == Dtype::q6_k) {
      put(x + 208, scale(gen) / 16);
    } else {
      put(x, scale(gen));
      if (d != Dtype::q5_0) put(x + 2, k_quant(d) ? std::fabs(scale(gen)) : scale(gen) * 8);
    }
  }
  return v;
}

// Every weight's parts, row-major [out, in].
std::vector<Parts> dequantized(Dtype d, const std::vector<uint8_t>& blocks, int64_t out, int64_t in) {
  std::vector<Parts> w(out * in);
  const int64_t n = quant_block_inputs(d);
  for (int64_t k = 0; k < out * in / n; ++k) dequantize_block(d, blocks.data() + k * quant_block_bytes(d), &w[k * n]);
  return w;
}

void check_against_f64(Dtype d, const std::vector<Parts>& w, int64_t out, int64_t in, const std::vector<float>& x,
                       const std::vector<float>& y, int64_t m) {
  const int64_t group = quant_block_inputs(d), blocks = in / group;
  std::vector<double> xd(m * in);
  std::vector<int8_t> q(in);
  std::vector<float> s(blocks);
  for (int64_t r = 0; r < m; ++r) {
    quantize_activations(x.data() + r * in, in, group, q.data(), s.data());
    for (int64_t i = 0; i < in; ++i) xd[r * in + i] = static_cast<double>(q[i]) * s[i / group];
  }
  const double per_a = (blocks + 8) * std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t r = 0; r < m; ++r) {
      double exact = 0, a = 0;
      for (int64_t i = 0; i < in; ++i) {
        const Parts& p = w[o * in + i];
        exact += xd[r * in + i] * (p.a + p.b);
        a += std::fabs(xd[r * in + i]) * (std::fabs(p.a) + std::fabs(p.b));
      }
      if (!(std::fabs(y[r * out + o] - exact) <= per_a * a)) ++bad;
    }
  }
  CHECK(bad == 0);
}

struct Case {
  Dtype d;
  Shape s;
};

// Shapes: one block and several, a partial last 16-output block, out of 16, 2048-input rows.
std::vector<Case> cases() {
  std::vector<Case> v;
  for (Dtype d : kFormats) {
    const int64_t n = quant_block_inputs(d);
    for (Shape s : {Shape{n, 19}, Shape{2 * n, 40}, Shape{n, 16}, Shape{2048, 50}}) v.push_back({d, s});
  }
  return v;
}

constexpr int64_t kTiledRows = 33;  // 8 + 8 + 8 + 8 + 1 and 16 + 16 + 1

}  // namespace

TEST_CASE("the nibble formats pack llama.cpp's blocks as stored: every weight equals ggml's dequantization") {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    const std::string dtype = dtype_name(c.d);
    CAPTURE(dtype);
    CAPTURE(c.s.in);
    const std::vector<uint8_t> blocks = random_blocks(c.d, c.s.out, c.s.in, seed++);
    const PackedWeight w = PackedWeight::pack(blocks.data(), c.s.out, c.s.in, c.d);
    const std::vector<Parts> parts = dequantized(c.d, blocks, c.s.out, c.s.in);
    int64_t differing = 0;
    for (int64_t o = 0; o < c.s.out; ++o) {
      for (int64_t i = 0; i < c.s.in; ++i) {
        const Parts& p = parts[o * c.s.in + i];
        differing += w.at(o, i) != static_cast<float>(p.a + p.b);
      }
    }
    CHECK(differing == 0);
    // Packed at most 3% above the stored bytes (the scales and mins as bytes, d and ms per lane).
    CHECK(static_cast<double>(w.bytes()) <= 1.03 * (c.s.out + 15) / 16 * 16 * stored_row_bytes(c.d, c.s.in) + 64);
  }
}

TEST_CASE("the nibble formats refuse an input size that is not a multiple of their block; specd does not write them") {
  const std::vector<uint8_t> blocks(4 * 210);
  CHECK_THROWS_AS(PackedWeight::pack(blocks.data(), 1, 128, Dtype::q6_k), std::invalid_argument);
  CHECK_THROWS_AS(PackedWeight::pack(blocks.data(), 1, 48, Dtype::q4_1), std::invalid_argument);
  const std::vector<float> f(256);
  CHECK_THROWS_AS(PackedWeight::quantize(f.data(), 1, 256, Dtype::q4_k), std::invalid_argument);
  CHECK(quant_block_inputs(Dtype::q5_k) == 256);
  CHECK(stored_row_bytes(Dtype::q4_k, 512) == 288);
  CHECK(stored_row_bytes(Dtype::q5_1, 64) == 48);
  const PackedWeight w = PackedWeight::pack(blocks.data(), 1, 256, Dtype::q6_k);
  CHECK_THROWS_AS((void)w.scale_at(0, 0), std::logic_error);  // several scales a weight: at() dequantizes
}

TEST_CASE("every tier of the nibble formats matches the float64 product and the reference bit for bit") {
  const std::vector<Isa> isas = isas_here();
  uint32_t seed = 10;
  for (const Case& c : cases()) {
    const std::vector<uint8_t> blocks = random_blocks(c.d, c.s.out, c.s.in, seed++);
    const PackedWeight w = PackedWeight::pack(blocks.data(), c.s.out, c.s.in, c.d);
    const std::vector<float> x = random_floats(kTiledRows * c.s.in, seed++);
    const std::vector<float> ref = run(w, x.data(), kTiledRows, Isa::reference);
    const std::string dtype = dtype_name(c.d);
    CAPTURE(dtype);
    CAPTURE(c.s.in);
    CAPTURE(c.s.out);
    check_against_f64(c.d, dequantized(c.d, blocks, c.s.out, c.s.in), c.s.out, c.s.in, x, ref, kTiledRows);
    for (Isa isa : isas) {
      const std::string kernel = isa_name(isa);
      CAPTURE(kernel);
      const std::vector<float> y = run(w, x.data(), kTiledRows, isa);
      CHECK(same_bits(y.data(), ref.data(), kTiledRows * c.s.out));
    }
  }
}

TEST_CASE("a row's outputs from the nibble formats are the same bits whatever m, tile position and threads") {
  KernelThreads two(2), three(3);
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    const std::vector<uint8_t> blocks = random_blocks(c.d, c.s.out, c.s.in, seed++);
    const PackedWeight w = PackedWeight::pack(blocks.data(), c.s.out, c.s.in, c.d);
    const std::vector<float> x = random_floats(kTiledRows * c.s.in, seed++);
    for (Isa isa : isas_here()) {
      const bool light = isa == Isa::reference && c.s.in > 1000;  // the reference is slow there
      const std::string dtype = dtype_name(c.d), kernel = isa_name(isa);
      CAPTURE(dtype);
      CAPTURE(c.s.in);
      CAPTURE(c.s.out);
      CAPTURE(kernel);
      const std::vector<float> tiled = run(w, x.data(), kTiledRows, isa);
      for (int64_t m = 1; m <= 17; light ? m += 8 : ++m) {
        const std::vector<float> y = run(w, x.data(), m, isa);
        CHECK(same_bits(y.data(), tiled.data(), m * c.s.out));
      }
      for (int64_t r = 0; r < (light ? 3 : kTiledRows); ++r) {
        const std::vector<float> alone = run(w, x.data() + r * c.s.in, 1, isa);
        CHECK(same_bits(alone.data(), tiled.data() + r * c.s.out, c.s.out));
      }
      const std::vector<float> shifted = run(w, x.data() + 5 * c.s.in, 12, isa);  // rows 5..16 at 0..11
      CHECK(same_bits(shifted.data(), tiled.data() + 5 * c.s.out, 12 * c.s.out));
      for (KernelThreads* pool : {&two, &three}) {
        for (int64_t m : {int64_t{1}, int64_t{5}, kTiledRows}) {
          const std::vector<float> y = run(w, x.data(), m, isa, pool);
          CHECK(same_bits(y.data(), tiled.data(), m * c.s.out));
        }
      }
    }
  }
}

TEST_CASE("Q4_K's largest sub-block sums (quants 15, scales 63, activations +-127) stay exact on every tier") {
  // The one-row AVX-512 tile adds a sub-block's 16 low (or high) quants times activations
  // in int16 before its scale: 4 x 4 x 15 x 127 = 30480 at the extreme, which this reaches.
  constexpr int64_t in = 512, out = 64;  // two super-blocks, four 16-output blocks (one tile)
  std::vector<uint8_t> blocks(out * stored_row_bytes(Dtype::q4_k, in), 0xff);  // q 15, sc 63, m 63
  for (size_t at = 0; at < blocks.size(); at += quant_block_bytes(Dtype::q4_k)) {
    const uint16_t d = float_to_f16(1e-3f), dmin = float_to_f16(5e-4f);
    std::memcpy(blocks.data() + at, &d, 2);
    std::memcpy(blocks.data() + at + 2, &dmin, 2);
  }
  const PackedWeight w = PackedWeight::pack(blocks.data(), out, in, Dtype::q4_k);
  std::vector<float> x(2 * in, 1.0f);  // row 0: every activation 127; row 1: every one -127
  std::fill(x.begin() + in, x.end(), -1.0f);
  const std::vector<float> ref = run(w, x.data(), 2, Isa::reference);
  check_against_f64(Dtype::q4_k, dequantized(Dtype::q4_k, blocks, out, in), out, in, x, ref, 2);
  for (Isa isa : isas_here()) {
    const std::string kernel = isa_name(isa);
    CAPTURE(kernel);
    for (int64_t r = 0; r < 2; ++r) {
      const std::vector<float> y = run(w, x.data() + r * in, 1, isa);
      CHECK(same_bits(y.data(), ref.data() + r * out, out));
    }
  }
}

TEST_CASE("a stacked matrix (Q4_K, Q6_K and F32 parts) runs each part on its kernel into its own columns") {
  const std::vector<uint8_t> a = random_blocks(Dtype::q4_k, 40, 512, 7), b = random_blocks(Dtype::q6_k, 24, 512, 8);
  const std::vector<float> c = random_floats(9 * 512, 9);
  std::vector<PackedWeight> parts;
  parts.push_back(PackedWeight::pack(a.data(), 40, 512, Dtype::q4_k));
  parts.push_back(PackedWeight::pack(b.data(), 24, 512, Dtype::q6_k));
  parts.push_back(PackedWeight::pack(c.data(), 9, 512, Dtype::f32));
  const PackedWeight alone[] = {PackedWeight::pack(a.data(), 40, 512, Dtype::q4_k),
                                PackedWeight::pack(b.data(), 24, 512, Dtype::q6_k),
                                PackedWeight::pack(c.data(), 9, 512, Dtype::f32)};
  const PackedWeight w = PackedWeight::stack(std::move(parts));
  REQUIRE(w.stacked());
  CHECK(w.out() == 73);
  CHECK(w.dtype() == Dtype::q4_k);
  CHECK(w.bytes() == alone[0].bytes() + alone[1].bytes() + alone[2].bytes());
  CHECK(w.at(45, 300) == alone[1].at(5, 300));
  CHECK(w.at(70, 3) == alone[2].at(6, 3));
  const std::vector<float> x = random_floats(5 * 512, 10);
  for (Isa isa : isas_here()) {
    const std::string kernel = isa_name(isa);
    CAPTURE(kernel);
    const std::vector<float> y = run(w, x.data(), 5, isa);
    int64_t first = 0;
    for (const PackedWeight& part : alone) {
      const std::vector<float> want = run(part, x.data(), 5, isa);
      for (int64_t r = 0; r < 5; ++r)
        CHECK(same_bits(y.data() + r * 73 + first, want.data() + r * part.out(), part.out()));
      first += part.out();
    }
  }
}
