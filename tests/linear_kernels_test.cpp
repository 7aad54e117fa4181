// The linear kernels (engine/kernels/) on every dtype and every ISA this CPU has, against
// a float64 product of the same stored weights, and row independence bit for bit.
//
// Tolerances, with S = sum_i |x_i||w_i| for one output:
// - F32 activations (every kernel but vdpbf16ps on BF16 weights): a chain of `in` FMAs
//   in float. Its rounding error is at most in * 2^-24 * S and in practice about
//   sqrt(in) * 2^-24 * S; we allow 1e-5 * sqrt(in) * S (~170x the typical error, and
//   below the worst case only for in > 28,000). Those kernels must also equal the
//   reference bit for bit, which catches a single wrong weight the bound could not.
// - BF16 activations (vdpbf16ps): each x rounded to 8 significant bits, a relative error
//   up to 2^-9, under 2^-8 * S in all, plus the F32 accumulation above.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/kernels/linear.hpp"
#include "tests/support/kernel_inputs.hpp"

using namespace specd::kernels;
using namespace specd::testing;

namespace {

const Shape kShapes[] = {{37, 19}, {128, 384}, {384, 1024}, {1024, 384}, {2048, 8192}};
constexpr int64_t kTiledRows = 37;  // more rows than two tiles: chunks of 13, 12 and 12 (AVX2: 5 and 4)

PackedWeight random_weight(Shape s, Dtype d, uint32_t seed) {
  const std::vector<float> f = random_floats(s.out * s.in, seed);
  if (d == Dtype::f32) return PackedWeight::pack(f.data(), s.out, s.in, d);
  std::vector<uint16_t> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = d == Dtype::f16 ? float_to_f16(f[i]) : float_to_bf16(f[i]);
  return PackedWeight::pack(h.data(), s.out, s.in, d);
}

// Every output of y (rows of x) within the stated bound of the float64 product.
void check_against_f64(const PackedWeight& w, const std::vector<float>& x, const std::vector<float>& y, int64_t m,
                       bool bf16_activations) {
  const double per_in = 1e-5 * std::sqrt(static_cast<double>(w.in())) + (bf16_activations ? 1.0 / 256 : 0.0);
  int64_t bad = 0;
  for (int64_t o = 0; o < w.out(); ++o) {
    std::vector<double> col(w.in());
    for (int64_t i = 0; i < w.in(); ++i) col[i] = w.at(o, i);
    for (int64_t r = 0; r < m; ++r) {
      double exact = 0, s = 0;
      for (int64_t i = 0; i < w.in(); ++i) {
        exact += static_cast<double>(x[r * w.in() + i]) * col[i];
        s += std::fabs(static_cast<double>(x[r * w.in() + i]) * col[i]);
      }
      if (!(std::fabs(y[r * w.out() + o] - exact) <= per_in * s)) ++bad;
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("16-bit conversions are exact and round to nearest even") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN payloads
    REQUIRE(float_to_f16(f16_to_float(static_cast<uint16_t>(h))) == h);
  }
  CHECK(f16_to_float(0x3C00) == 1.0f);
  CHECK(f16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // a tie goes to even
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);  // a tie goes to even
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(bf16_to_float(0xC040) == -3.0f);
}

TEST_CASE("PackedWeight keeps the checkpoint dtype and every stored value") {
  const Shape s{37, 19};
  for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
    const std::vector<float> f = random_floats(s.out * s.in, 7);
    std::vector<uint16_t> h(f.size());
    for (size_t i = 0; i < f.size(); ++i) h[i] = d == Dtype::f16 ? float_to_f16(f[i]) : float_to_bf16(f[i]);
    const PackedWeight w =
        PackedWeight::pack(d == Dtype::f32 ? static_cast<const void*>(f.data()) : h.data(), s.out, s.in, d);
    CHECK(w.out() == 19);
    CHECK(w.in() == 37);
    CHECK(w.dtype() == d);
    CHECK(reinterpret_cast<uintptr_t>(w.data()) % 64 == 0);
    CHECK(w.block_bytes() % 64 == 0);
    // two blocks of 16 outputs; 37 inputs (38 for the 16-bit pairs) of the dtype's size
    CHECK(w.bytes() == 2u * 16 * (d == Dtype::f32 ? 37 * 4 : 38 * 2));
    for (int64_t o = 0; o < s.out; ++o) {
      for (int64_t i = 0; i < s.in; ++i) {
        const size_t k = o * s.in + i;
        const float want = d == Dtype::f32 ? f[k] : d == Dtype::f16 ? f16_to_float(h[k]) : bf16_to_float(h[k]);
        REQUIRE(w.at(o, i) == want);
      }
    }
  }
}

TEST_CASE(
    "a matrix packed part by part, ranges in any order, equals it packed at once; each source byte reported once") {
  const int64_t in = 64, out = 37;
  const std::vector<float> f = random_floats(out * in, 11);
  for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::q8_0, Dtype::q4_0}) {
    CAPTURE(dtype_name(d));
    std::vector<std::byte> source;  // row-major rows of the dtype (the block formats: llama.cpp blocks)
    const size_t row_bytes = is_quantized(d) ? in / kQuantGroup * quant_block_bytes(d) : in * dtype_size(d);
    source.resize(out * row_bytes);
    for (int64_t o = 0; o < out; ++o) {
      std::byte* row = source.data() + o * row_bytes;
      if (is_quantized(d)) {
        quantize_row(f.data() + o * in, in, d, row);
        continue;
      }
      for (int64_t i = 0; i < in; ++i) {
        const float x = f[o * in + i];
        const uint16_t h = d == Dtype::f16 ? float_to_f16(x) : float_to_bf16(x);
        if (d == Dtype::f32) {
          std::memcpy(row + i * 4, &x, 4);
        } else {
          std::memcpy(row + i * 2, &h, 2);
        }
      }
    }
    const PackedWeight whole = PackedWeight::pack(source.data(), out, in, d);
    std::vector<int> reported(source.size(), 0);
    PackOptions options;
    options.parallel = [](int64_t n, const std::function<void(int64_t, int64_t)>& body) {
      for (int64_t b = n; b-- > 0;) body(b, b + 1);  // one block at a time, last first
    };
    options.packed = [&](const std::byte* data, size_t bytes) {
      for (size_t k = 0; k < bytes; ++k) reported[static_cast<size_t>(data - source.data()) + k] += 1;
    };
    PackedWeightBuilder builder(out, in, d);
    int64_t row = 0;
    for (int64_t rows : {5, 20, 12}) {  // parts that start and end inside blocks
      builder.add(source.data() + row * row_bytes, rows, options);
      row += rows;
    }
    const PackedWeight parts = std::move(builder).finish();
    REQUIRE(parts.bytes() == whole.bytes());
    CHECK(std::memcmp(parts.data(), whole.data(), whole.bytes()) == 0);
    CHECK(std::all_of(reported.begin(), reported.end(), [](int n) { return n == 1; }));
    PackedWeightBuilder short_of_rows(out, in, d);
    short_of_rows.add(source.data(), out - 1);
    CHECK_THROWS_AS(std::move(short_of_rows).finish(), std::logic_error);
  }
}

TEST_CASE("every kernel matches the float64 product, and rows are independent of m, tile and threads") {
  const std::vector<Isa> isas = isas_here();
  MESSAGE("ISAs on this CPU: " << isas.size() << ", best " << std::string(isa_name(best_isa())));
  KernelThreads two(2), three(3);
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
      const PackedWeight w = random_weight(s, d, seed++);
      const std::vector<float> x = random_floats(kTiledRows * s.in, seed++);
      const std::vector<float> ref = run(w, x.data(), kTiledRows, Isa::reference);
      check_against_f64(w, x, ref, kTiledRows, false);
      for (Isa isa : isas) {
        const std::string dtype = dtype_name(d), kernel = isa_name(isa);
        CAPTURE(s.in);
        CAPTURE(s.out);
        CAPTURE(dtype);
        CAPTURE(kernel);
        const bool bf16_activations = isa == Isa::avx512bf16 && d == Dtype::bf16;
        const std::vector<float> tiled = isa == Isa::reference ? ref : run(w, x.data(), kTiledRows, isa);
        if (bf16_activations) {
          check_against_f64(w, x, tiled, kTiledRows, true);
        } else {
          CHECK(same_bits(tiled.data(), ref.data(), kTiledRows * s.out));
        }
        // The reference is slow on the large shape: fewer m there.
        const bool light = isa == Isa::reference && s.in * s.out > (1 << 20);
        for (int64_t m = 1; m <= 16; light ? m += 15 : ++m) {
          const std::vector<float> y = run(w, x.data(), m, isa);
          CHECK(same_bits(y.data(), tiled.data(), m * s.out));
        }
        for (int64_t r = 0; r < (light ? 3 : kTiledRows); ++r) {
          const std::vector<float> alone = run(w, x.data() + r * s.in, 1, isa);
          CHECK(same_bits(alone.data(), tiled.data() + r * s.out, s.out));
        }
        for (KernelThreads* pool : {&two, &three}) {
          const std::vector<float> y = run(w, x.data(), light ? 5 : kTiledRows, isa, pool);
          CHECK(same_bits(y.data(), tiled.data(), (light ? 5 : kTiledRows) * s.out));
        }
      }
    }
  }
}

TEST_CASE("linear without a pool runs on KernelThreads::current()") {
  const PackedWeight w = random_weight({1024, 384}, Dtype::bf16, 99);
  const std::vector<float> x = random_floats(4 * 1024, 100);
  std::vector<float> alone(4 * 384), pooled(4 * 384);
  CHECK(KernelThreads::current() == nullptr);
  linear(w, x.data(), 4, alone.data());
  KernelThreads pool(2);
  KernelThreads::set_current(&pool);
  linear(w, x.data(), 4, pooled.data());
  KernelThreads::set_current(nullptr);
  CHECK(same_bits(alone.data(), pooled.data(), 4 * 384));
}

TEST_CASE("parallel_for covers each index once, in up to four chunks a thread") {
  for (int32_t n_threads : {1, 2, 3, 5}) {
    KernelThreads pool(n_threads);
    for (int64_t n : {1, 2, 7, 100, 1000}) {
      std::vector<int> hits(n, 0);
      std::atomic<int> calls{0};
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        ++calls;
        for (int64_t i = b; i < e; ++i) ++hits[i];
      });
      CHECK(calls.load() == (n_threads == 1 ? 1 : std::min<int64_t>(n, 4 * n_threads)));
      CHECK(std::count(hits.begin(), hits.end(), 1) == n);
    }
    std::atomic<int> calls{0};
    pool.parallel_for(100, 60, [&](int64_t, int64_t) { ++calls; });  // the grain merges parts
    CHECK(calls.load() == std::min(2, n_threads));
  }
}

TEST_CASE("idle workers sleep instead of spinning") {
  KernelThreads pool(3);
  pool.parallel_for(3, 1, [](int64_t, int64_t) {});
  const auto cpu_seconds = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Two spinning workers would use ~0.6 s of CPU here; sleeping ones use the bounded
  // spin (50 us each) and nothing more.
  CHECK(cpu_seconds() - before < 0.03);
}
