// The block formats (Q8_0, Q4_0): llama.cpp's quantization rules on fixed inputs, the
// packed layout against the raw blocks, and the kernels of every tier this CPU has
// against a float64 product, with rows bit-identical whatever m, tile and threads.
//
// Tolerance: the kernels multiply quantized activations (quantize_activations), so the
// float64 product is of the dequantized weights and the dequantized activations. Each
// group's integer sum is exact; per group one rounding of d_w * d_x and one of the fma,
// so with S = sum_i |x_i w_i| an output is within (groups + 2) * 2^-24 * S of it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/linear.hpp"
#include "tests/support/kernel_inputs.hpp"

using namespace specd::kernels;
using namespace specd::testing;

namespace {

// Multiples of 1/64, exact in float, so the expected values below (llama.cpp's
// quantize_row_q*_0_ref evaluated in float32) do not depend on how a literal is parsed.
const int kInts[32] = {-100, 3,   17, -45, 64, 99,  -1, 0, 50, -50, 25,  -25, 12, 13,  -77, 88,
                       31,   -32, 7,  -8,  63, -64, 1,  2, -3, 44,  -90, 81,  27, -14, 36,  5};
// The same with the largest magnitude positive (Q4_0's scale then comes out negative).
const int kIntsPositiveMax[32] = {-100, -2, -9, -45, -32, 120, -1, 0,  -25, -50, -13, 12, 12,  -7, 38, 88,
                                  -16,  16, 7,  4,   -32, -64, -1, -1, -3,  -22, 45,  81, -14, 7,  36, -3};

std::vector<float> sixty_fourths(const int (&ints)[32]) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(ints[j]) / 64;
  return x;
}

uint16_t scale_bits(const std::byte* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return h;
}

// Every output of y within (groups + 2) * 2^-24 * S of the float64 product of the
// dequantized weights and activations.
void check_against_f64(const PackedWeight& w, const std::vector<float>& x, const std::vector<float>& y, int64_t m) {
  const int64_t in = w.in(), groups = in / kQuantGroup;
  std::vector<double> xd(m * in);
  std::vector<int8_t> q(in);
  std::vector<float> d(groups);
  for (int64_t r = 0; r < m; ++r) {
    quantize_activations(x.data() + r * in, in, q.data(), d.data());
    for (int64_t i = 0; i < in; ++i) xd[r * in + i] = static_cast<double>(q[i]) * d[i / kQuantGroup];
  }
  const double per_s = (groups + 2) * std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t o = 0; o < w.out(); ++o) {
    std::vector<double> col(in);
    for (int64_t i = 0; i < in; ++i) col[i] = w.at(o, i);
    for (int64_t r = 0; r < m; ++r) {
      double exact = 0, s = 0;
      for (int64_t i = 0; i < in; ++i) {
        exact += xd[r * in + i] * col[i];
        s += std::fabs(xd[r * in + i] * col[i]);
      }
      if (!(std::fabs(y[r * w.out() + o] - exact) <= per_s * s)) ++bad;
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("quantize_row follows llama.cpp's Q8_0 rules: d = amax / 127 as F16, q = round(x / d)") {
  const std::vector<float> x = sixty_fourths(kInts);
  std::vector<std::byte> block(quant_block_bytes(Dtype::q8_0));
  REQUIRE(block.size() == 34);
  quantize_row(x.data(), 32, Dtype::q8_0, block.data());
  CHECK(scale_bits(block.data()) == 0x224d);  // F16 of 1.5625 / 127
  const int want[32] = {-127, 4,   22, -57, 81, 126, -1, 0, 64, -64, 32,   -32, 15, 17,  -98, 112,
                        39,   -41, 9,  -10, 80, -81, 1,  3, -4, 56,  -114, 103, 34, -18, 46,  6};
  for (int j = 0; j < 32; ++j) CHECK(static_cast<int8_t>(block[2 + j]) == want[j]);
  const PackedWeight w = PackedWeight::quantize(x.data(), 1, 32, Dtype::q8_0);
  for (int j = 0; j < 32; ++j) {
    CHECK(w.quant_at(0, j) == want[j]);
    CHECK(w.at(0, j) == static_cast<float>(want[j]) * 0.01230621337890625f);  // q * d, d the F16 scale
  }
}

TEST_CASE("quantize_row follows llama.cpp's Q4_0 rules: d = max / -8, q = min(15, (int8)(x / d + 8.5))") {
  const std::vector<float> x = sixty_fourths(kInts), y = sixty_fourths(kIntsPositiveMax);
  std::vector<float> row(x);
  row.insert(row.end(), y.begin(), y.end());
  std::vector<std::byte> blocks(2 * quant_block_bytes(Dtype::q4_0));
  REQUIRE(blocks.size() == 36);
  quantize_row(row.data(), 64, Dtype::q4_0, blocks.data());
  // -1.5625 has the largest magnitude: d = 0.1953125; 99/64 gives 16.42, clamped to 15.
  const int want_a[32] = {0,  8, 9, 4, 13, 15, 8, 8, 12, 4,  10, 6,  9,  9, 2,  15,
                          10, 5, 9, 7, 13, 3,  8, 8, 8,  12, 1,  14, 10, 7, 11, 8};
  // 1.875 has it: d = -0.234375, and 1.875 itself lands on 0.
  const int want_b[32] = {15, 8, 9, 11, 10, 0,  8, 8, 10, 11, 9, 7, 7, 8, 5, 2,
                          9,  7, 8, 8,  10, 12, 8, 8, 8,  9,  5, 3, 9, 8, 6, 8};
  CHECK(scale_bits(blocks.data()) == 0x3240);
  CHECK(scale_bits(blocks.data() + 18) == 0xb380);
  for (int j = 0; j < 16; ++j) {  // low nibble input j, high nibble input j + 16
    CHECK(std::to_integer<int>(blocks[2 + j]) == (want_a[j] | want_a[j + 16] << 4));
    CHECK(std::to_integer<int>(blocks[20 + j]) == (want_b[j] | want_b[j + 16] << 4));
  }
  const PackedWeight w = PackedWeight::quantize(row.data(), 1, 64, Dtype::q4_0);
  for (int j = 0; j < 32; ++j) {
    CHECK(w.quant_at(0, j) == want_a[j]);
    CHECK(w.quant_at(0, 32 + j) == want_b[j]);
    CHECK(w.at(0, j) == static_cast<float>(want_a[j] - 8) * 0.1953125f);
    CHECK(w.at(0, 32 + j) == static_cast<float>(want_b[j] - 8) * -0.234375f);
  }
}

TEST_CASE("pack takes llama.cpp's raw blocks: every quant and scale lands where at() finds it") {
  const int64_t out = 19, in = 96, groups = 3;
  for (Dtype d : {Dtype::q8_0, Dtype::q4_0}) {
    const size_t bb = quant_block_bytes(d);
    std::vector<std::byte> raw(out * groups * bb);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t g = 0; g < groups; ++g) {
        std::byte* b = raw.data() + (o * groups + g) * bb;
        const uint16_t h = float_to_f16(0.5f + 0.25f * static_cast<float>(o) - static_cast<float>(g));
        std::memcpy(b, &h, 2);
        for (size_t j = 0; j + 2 < bb; ++j) b[2 + j] = static_cast<std::byte>((o * 37 + g * 11 + j * 5) & 0xff);
      }
    }
    const PackedWeight w = PackedWeight::pack(raw.data(), out, in, d);
    CHECK(w.dtype() == d);
    CHECK(reinterpret_cast<uintptr_t>(w.data()) % 64 == 0);
    CHECK(w.block_bytes() % 64 == 0);
    // 2 blocks; per block 3 groups of 16 x 32 quants and 16 F16 scales, rounded up to 64
    CHECK(w.bytes() == 2u * (d == Dtype::q8_0 ? 3 * 544 + 32 : 3 * 288 + 32));
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const std::byte* b = raw.data() + (o * groups + i / 32) * bb;
        const float scale = f16_to_float(scale_bits(b));
        const int64_t j = i % 32;
        const int q = d == Dtype::q8_0 ? static_cast<int8_t>(b[2 + j])
                                       : std::to_integer<int>(j < 16 ? b[2 + j] & std::byte{15} : b[2 + j - 16] >> 4);
        REQUIRE(w.quant_at(o, i) == q);
        REQUIRE(w.scale_at(o, i) == scale);
        REQUIRE(w.at(o, i) == static_cast<float>(d == Dtype::q8_0 ? q : q - 8) * scale);
      }
    }
  }
}

TEST_CASE("the block formats refuse an input size that is not a multiple of 32") {
  const std::vector<float> x(2 * 48, 0.5f);
  for (Dtype d : {Dtype::q8_0, Dtype::q4_0}) {
    CHECK_THROWS_WITH_AS(PackedWeight::quantize(x.data(), 2, 48, d), doctest::Contains("multiple of 32, got 48"),
                         std::invalid_argument);
    CHECK_THROWS_AS(PackedWeight::pack(x.data(), 2, 48, d), std::invalid_argument);
  }
  CHECK_THROWS_AS(dtype_size(Dtype::q4_0), std::invalid_argument);
}

TEST_CASE("quantize_activations: d = amax / 127, q rounded to nearest even, a zero group stays zero") {
  std::vector<float> x(96, 0.0f);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) * 0.25f;  // amax 4: q = x * 31.75
  x[32] = 127, x[33] = 2.5f, x[34] = -3.5f, x[35] = 0.5f;                  // d = 1: the ties show
  std::vector<int8_t> q(96);
  std::vector<float> d(3);
  quantize_activations(x.data(), 96, q.data(), d.data());
  CHECK(d[0] == 4.0f / 127);
  CHECK(d[1] == 1.0f);
  CHECK(d[2] == 0.0f);
  CHECK(q[0] == -127);
  CHECK(q[17] == 8);    // 7.94
  CHECK(q[18] == 16);   // 15.875
  CHECK(q[20] == 32);   // 31.75
  CHECK(q[31] == 119);  // 119.06
  CHECK(q[32] == 127);
  CHECK(q[33] == 2);  // ties to even, where llama.cpp's scalar roundf would give 3 (its SIMD paths give 2)
  CHECK(q[34] == -4);
  CHECK(q[35] == 0);
  for (int j = 64; j < 96; ++j) CHECK(q[j] == 0);
  // A super-block of 256: the largest magnitude sets d wherever it sits.
  for (int at : {0, 101, 255}) {
    std::vector<float> s(256, 0.5f);
    s[at] = -8.0f;
    std::vector<int8_t> qs(256);
    float ds = 0;
    quantize_activations(s.data(), 256, 256, qs.data(), &ds);
    CHECK(ds == 8.0f / 127);
    CHECK(qs[at] == -127);
    CHECK(qs[at == 0 ? 1 : 0] == 8);  // 7.94
  }
}

namespace {

// in = 32, 64 and 4128 (129 groups: a Q8_0 block whose size is rounded up to 64 bytes);
// out not a multiple of 16 but for 16 itself.
const Shape kShapes[] = {{32, 19}, {64, 40}, {64, 16}, {4128, 50}};
constexpr int64_t kTiledRows = 33;  // 16 + 16 + 1

}  // namespace

TEST_CASE("every tier of the block formats matches the float64 product and the reference bit for bit") {
  const std::vector<Isa> isas = isas_here();
  MESSAGE("ISAs on this CPU: " << isas.size() << ", best " << std::string(isa_name(best_isa())));
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (Dtype d : {Dtype::q8_0, Dtype::q4_0}) {
      const std::vector<float> wf = random_floats(s.out * s.in, seed++);
      const PackedWeight w = PackedWeight::quantize(wf.data(), s.out, s.in, d);
      const std::vector<float> x = random_floats(kTiledRows * s.in, seed++);
      const std::vector<float> ref = run(w, x.data(), kTiledRows, Isa::reference);
      CAPTURE(s.in);
      CAPTURE(s.out);
      const std::string dtype = dtype_name(d);
      CAPTURE(dtype);
      check_against_f64(w, x, ref, kTiledRows);
      for (Isa isa : isas) {
        const std::string kernel = isa_name(isa);
        CAPTURE(kernel);
        const std::vector<float> y = run(w, x.data(), kTiledRows, isa);
        CHECK(same_bits(y.data(), ref.data(), kTiledRows * s.out));
      }
    }
  }
}

TEST_CASE("a row's outputs from the block formats are the same bits whatever m, tile position and threads") {
  KernelThreads two(2), three(3);
  uint32_t seed = 100;
  for (const Shape& s : kShapes) {
    for (Dtype d : {Dtype::q8_0, Dtype::q4_0}) {
      const std::vector<float> wf = random_floats(s.out * s.in, seed++);
      const PackedWeight w = PackedWeight::quantize(wf.data(), s.out, s.in, d);
      const std::vector<float> x = random_floats(kTiledRows * s.in, seed++);
      for (Isa isa : isas_here()) {
        const std::string dtype = dtype_name(d), kernel = isa_name(isa);
        CAPTURE(s.in);
        CAPTURE(s.out);
        CAPTURE(dtype);
        CAPTURE(kernel);
        const std::vector<float> tiled = run(w, x.data(), kTiledRows, isa);
        const bool light = isa == Isa::reference && s.in > 1000;  // the reference is slow there
        for (int64_t m = 1; m <= 17; light ? m += 8 : ++m) {
          const std::vector<float> y = run(w, x.data(), m, isa);
          CHECK(same_bits(y.data(), tiled.data(), m * s.out));
        }
        for (int64_t r = 0; r < (light ? 3 : kTiledRows); ++r) {
          const std::vector<float> alone = run(w, x.data() + r * s.in, 1, isa);
          CHECK(same_bits(alone.data(), tiled.data() + r * s.out, s.out));
        }
        // Rows 5..16 at tile positions 0..11.
        const std::vector<float> shifted = run(w, x.data() + 5 * s.in, 12, isa);
        CHECK(same_bits(shifted.data(), tiled.data() + 5 * s.out, 12 * s.out));
        for (KernelThreads* pool : {&two, &three}) {
          for (int64_t m : {int64_t{1}, int64_t{5}, kTiledRows}) {
            const std::vector<float> y = run(w, x.data(), m, isa, pool);
            CHECK(same_bits(y.data(), tiled.data(), m * s.out));
          }
        }
      }
    }
  }
}

TEST_CASE("the default tier runs the block formats as best_isa(), which SPECD_KERNEL_ISA caps") {
  const std::vector<float> wf = random_floats(40 * 128, 7);
  const std::vector<float> x = random_floats(5 * 128, 8);
  const char* forced = std::getenv("SPECD_KERNEL_ISA");
  MESSAGE("SPECD_KERNEL_ISA=" << std::string(forced ? forced : "(unset)") << ", default tier "
                              << std::string(isa_name(best_isa())));
  if (forced && std::string(forced) == "avx2" && isa_supported(Isa::avx2)) CHECK(best_isa() == Isa::avx2);
  for (Dtype d : {Dtype::q8_0, Dtype::q4_0}) {
    const PackedWeight w = PackedWeight::quantize(wf.data(), 40, 128, d);
    std::vector<float> y(5 * 40);
    linear(w, x.data(), 5, y.data());
    const std::vector<float> want = run(w, x.data(), 5, best_isa());
    CHECK(same_bits(y.data(), want.data(), 5 * 40));
  }
}
