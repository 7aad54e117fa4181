// The attention kernels (engine/kernels/attention.hpp) on every tier this CPU has,
// against float64 attention over the same BF16 keys and values, for several head sizes,
// block sizes, contexts and group sizes; and that a tier's output is deterministic and
// independent of the other heads, calls and threads.
//
// Tolerance. With S_j = scale * sum_i |q_i k_ij| (the magnitude behind score j) and
// V = max_j |v_ij|, each output may be off the float64 value by
//   (4e-7 * max_j S_j + 2e-7) * V.
// A score in F32 is off by at most head_dim * 2^-24 * S_j, in practice far less (partial
// sums of products of random sign grow like sqrt(head_dim) terms, not head_dim); a
// weight exp(s_j - max) carries that error, relative, plus ~2e-7 from exp, and the
// normalised sum moves by at most twice the largest relative weight error times V. The
// worst ratio seen is printed (MESSAGE); the bound leaves ~10x over it. A dropped key or
// a wrong block moves an output by about V / context: over 20x the bound at every
// context tested with ordinary scores.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/kernels/attention.hpp"
#include "engine/kernels/packed_weight.hpp"

using namespace specd::kernels;

namespace {

constexpr uint16_t kNanBf16 = 0x7FC0;

// A paged pool of `kv_heads` heads holding one sequence of `keys` positions in shuffled
// blocks, the positions past `keys` in its last block NaN (stale data must not leak).
struct Pool {
  int32_t head_dim, block_size, kv_heads;
  int64_t keys;
  std::vector<int32_t> table;
  std::vector<uint16_t> k, v;
  int64_t block_stride() const { return int64_t{kv_heads} * block_size * head_dim; }

  Pool(int32_t d, int32_t bs, int32_t heads, int64_t n, uint32_t seed)
      : head_dim(d), block_size(bs), kv_heads(heads), keys(n) {
    const auto blocks = static_cast<int32_t>((n + bs - 1) / bs);
    const int32_t total = blocks + 3;  // spare blocks the table skips
    table.resize(blocks);
    std::vector<int32_t> order(total);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 gen(seed);
    std::shuffle(order.begin(), order.end(), gen);
    std::copy_n(order.begin(), blocks, table.begin());
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    k.resize(total * block_stride());
    v.resize(k.size());
    for (auto& x : k) x = float_to_bf16(dist(gen));
    for (auto& x : v) x = float_to_bf16(dist(gen));
    for (int64_t p = n; p < int64_t{blocks} * bs; ++p) {
      for (int32_t h = 0; h < heads; ++h) {
        for (int32_t i = 0; i < d; ++i) key(h, p, i) = value(h, p, i) = kNanBf16;
      }
    }
  }
  uint16_t& key(int32_t h, int64_t p, int32_t i) {
    return k[table[p / block_size] * block_stride() + (int64_t{h} * head_dim + i) * block_size + p % block_size];
  }
  uint16_t& value(int32_t h, int64_t p, int32_t i) {
    return v[table[p / block_size] * block_stride() + (int64_t{h} * block_size + p % block_size) * head_dim + i];
  }
  PagedKv head(int32_t h) const {
    return {k.data(), v.data(), block_stride(), int64_t{h} * block_size * head_dim, table.data(), block_size, head_dim};
  }
};

std::vector<float> random_floats(int64_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

std::vector<float> run(const Pool& pool, int32_t h, int64_t keys, const std::vector<float>& q, int32_t group, Isa isa) {
  std::vector<float> out(q.size(), std::nanf(""));
  attend(pool.head(h), keys, q.data(), group, 1.0f / std::sqrt(static_cast<float>(pool.head_dim)), out.data(), isa);
  return out;
}

// The largest error of `out` over the bound above (<= 1 passes), against float64.
double worst_over_bound(Pool& pool, int32_t h, int64_t keys, const std::vector<float>& q, int32_t group,
                        const std::vector<float>& out) {
  const int32_t d = pool.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  double worst = 0;
  for (int32_t g = 0; g < group; ++g) {
    std::vector<double> s(keys);
    double top = -INFINITY, magnitude = 0;
    for (int64_t p = 0; p < keys; ++p) {
      double dot = 0, abs = 0;
      for (int32_t i = 0; i < d; ++i) {
        const double x = double{q[g * d + i]} * bf16_to_float(pool.key(h, p, i));
        dot += x;
        abs += std::fabs(x);
      }
      s[p] = dot * scale;
      top = std::max(top, s[p]);
      magnitude = std::max(magnitude, abs * scale);
    }
    double sum = 0;
    for (double& x : s) sum += x = std::exp(x - top);
    for (int32_t i = 0; i < d; ++i) {
      double exact = 0, vmax = 0;
      for (int64_t p = 0; p < keys; ++p) {
        const double v = bf16_to_float(pool.value(h, p, i));
        exact += s[p] * v;
        vmax = std::max(vmax, std::fabs(v));
      }
      exact /= sum;
      const double bound = (4e-7 * magnitude + 2e-7) * vmax;
      const double err = std::fabs(out[g * d + i] - exact);
      worst = std::max(worst, std::isnan(err) ? INFINITY : err / bound);
    }
  }
  return worst;
}

std::vector<Isa> tiers_here() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::reference, Isa::avx2, Isa::avx512f}) {
    if (isa_supported(isa)) v.push_back(isa);
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  int32_t head_dim, block_size, group;
  std::vector<int64_t> contexts;
};

// Vector shapes (multiples of 16) at several sizes, group sizes around the 4-head tile,
// and two shapes only the reference kernel takes (the vector tiers fall back to it).
const Shape kShapes[] = {
    {128, 16, 3, {1, 5, 16, 17, 128, 1000}},
    {64, 16, 3, {1, 31, 33, 300}},
    {32, 32, 2, {1, 15, 32, 70}},
    {16, 16, 5, {1, 9, 40}},
    {128, 32, 8, {3, 200}},
    {128, 16, 1, {1, 4000}},
    {24, 16, 2, {1, 19}},
    {64, 8, 3, {1, 23}},
};

}  // namespace

TEST_CASE("every tier matches float64 attention over the BF16 cache within the stated bound") {
  uint32_t seed = 1;
  const std::vector<Isa> tiers = tiers_here();
  std::vector<double> worst(tiers.size(), 0.0);  // per tier, over every shape
  for (const Shape& s : kShapes) {
    for (float spread : {1.0f, 12.0f}) {  // ordinary scores, and peaked ones (softmax near one-hot)
      Pool pool(s.head_dim, s.block_size, 2, s.contexts.back(), seed++);
      const std::vector<float> q = random_floats(int64_t{s.group} * s.head_dim, seed++, spread);
      for (int64_t keys : s.contexts) {
        for (size_t t = 0; t < tiers.size(); ++t) {
          const Isa isa = tiers[t];
          CAPTURE(s.head_dim);
          CAPTURE(s.block_size);
          CAPTURE(s.group);
          CAPTURE(keys);
          CAPTURE(spread);
          const std::string tier = isa_name(isa);
          CAPTURE(tier);
          const double w = worst_over_bound(pool, 1, keys, q, s.group, run(pool, 1, keys, q, s.group, isa));
          CHECK(w <= 1.0);
          worst[t] = std::max(worst[t], w);
        }
      }
    }
  }
  for (size_t t = 0; t < tiers.size(); ++t)
    MESSAGE(std::string(isa_name(tiers[t])) << ": worst error / bound " << worst[t]);
}

TEST_CASE("a head's output depends only on its query and the cache: not on its group, calls or threads") {
  Pool pool(128, 16, 2, 777, 41);
  const int32_t group = 5;
  const std::vector<float> q = random_floats(group * 128, 42, 1.0f);
  for (Isa isa : tiers_here()) {
    const std::string tier = isa_name(isa);
    CAPTURE(tier);
    const std::vector<float> all = run(pool, 0, 777, q, group, isa);
    CHECK(same_bits(all, run(pool, 0, 777, q, group, isa)));
    for (int32_t g = 0; g < group; ++g) {
      const std::vector<float> one(q.begin() + g * 128, q.begin() + (g + 1) * 128);
      const std::vector<float> alone = run(pool, 0, 777, one, 1, isa);
      CHECK(std::memcmp(alone.data(), all.data() + g * 128, 128 * sizeof(float)) == 0);
    }
    // A longer call first (its scratch is reused), and another thread (its own scratch).
    (void)run(pool, 0, 20, q, group, isa);
    CHECK(same_bits(all, run(pool, 0, 777, q, group, isa)));
    std::vector<float> other;
    std::thread([&] { other = run(pool, 0, 777, q, group, isa); }).join();
    CHECK(same_bits(all, other));
  }
}

TEST_CASE("the default tier is best_isa(), which SPECD_KERNEL_ISA caps") {
  Pool pool(64, 16, 1, 50, 5);
  const std::vector<float> q = random_floats(3 * 64, 6, 1.0f);
  std::vector<float> out(q.size());
  attend(pool.head(0), 50, q.data(), 3, 0.125f, out.data());
  std::vector<float> best(q.size());
  attend(pool.head(0), 50, q.data(), 3, 0.125f, best.data(), best_isa());
  CHECK(same_bits(out, best));
  const char* forced = std::getenv("SPECD_KERNEL_ISA");
  MESSAGE("SPECD_KERNEL_ISA=" << std::string(forced ? forced : "(unset)") << ", default tier "
                              << std::string(isa_name(best_isa())));
  if (forced && std::string(forced) == "avx2" && isa_supported(Isa::avx2)) CHECK(best_isa() == Isa::avx2);
  if (forced && std::string(forced) == "reference") CHECK(best_isa() == Isa::reference);
}
