#include "tools/specd/bench_attention.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/attention.hpp"
#include "engine/model/kv_block_pool.hpp"
#include "tools/specd/bench_timing.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

using namespace specd::kernels;

constexpr int32_t kHeads = 24, kKvHeads = 8, kHeadDim = 128, kBlockSize = 16, kGroup = kHeads / kKvHeads;
constexpr int64_t kStreamBytes = int64_t(128) << 20;  // 4x this machine's L3 (bench_kernels.cpp)
constexpr const char* kBaseline = "scalar_f32";

// The baseline: the attention specd ran before the paged cache (native_forward.cpp at
// ca31c3a), F32 keys and values contiguous per KV head, one query head at a time.
namespace scalar_f32 {

constexpr int kLanes = 16;

// Not inlined, as there, where rms_norm calls it too.
[[gnu::noinline]] float dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

void attend_head(const float* q, const float* keys, const float* values, int64_t last, int64_t d, float* scores,
                 float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  float top = -INFINITY;
  for (int64_t j = 0; j <= last; ++j) {
    scores[j] = dot(q, keys + j * d, d) * scale;
    top = std::max(top, scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j <= last; ++j) {
    scores[j] = std::exp(scores[j] - top);
    sum += scores[j];
  }
  std::fill(out, out + d, 0.0f);
  for (int64_t j = 0; j <= last; ++j) {
    const float p = scores[j] / sum;
    const float* v = values + j * d;
    for (int64_t i = 0; i < d; ++i) out[i] += p * v[i];
  }
}

}  // namespace scalar_f32

// One row of one layer, every query head. Not inlined, so that callgrind can count it
// alone (--toggle-collect).
[[gnu::noinline]] void attention_row(const KvBlockPool& pool, int32_t layer, const int32_t* table, int64_t keys,
                                     const float* q, float* out, Isa isa) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (int32_t h = 0; h < kKvHeads; ++h) {
    attend(pool.head(layer, h, table), keys, q + h * kGroup * kHeadDim, kGroup, scale, out + h * kGroup * kHeadDim,
           isa);
  }
}

// The baseline's loop over one row's heads. head_dim comes at run time, as it does there,
// so that dot is compiled for any length (a constant would let the compiler specialise it).
volatile int64_t baseline_head_dim = kHeadDim;

[[gnu::noinline]] void baseline_attention_row(const float* keys, const float* values, int64_t context, const float* q,
                                              float* out) {
  thread_local std::vector<float> scores;
  const int64_t d = baseline_head_dim;
  for (int32_t h = 0; h < kHeads; ++h) {
    if (scores.size() < static_cast<size_t>(context)) scores.resize(context);
    const int64_t base = (h / kGroup) * context * d;
    scalar_f32::attend_head(q + h * d, keys + base, values + base, context - 1, d, scores.data(), out + h * d);
  }
}

std::vector<std::string> tiers(const std::string& names) {
  std::vector<std::string> out;
  auto wanted = [&](const std::string& n) {
    return names.empty() || ("," + names + ",").find("," + n + ",") != std::string::npos;
  };
  if (wanted(kBaseline)) out.push_back(kBaseline);
  for (Isa isa : {Isa::reference, Isa::avx2, Isa::avx512f}) {
    if (isa_supported(isa) && wanted(isa_name(isa))) out.push_back(isa_name(isa));
  }
  if (out.empty()) throw CLI::ValidationError("--tiers", "no tier of '" + names + "' runs on this CPU");
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// `layers` layers of one sequence of `keys` positions: in shuffled BF16 blocks for the
// tiers, contiguous F32 for the baseline.
struct Sequence {
  std::unique_ptr<KvBlockPool> pool;
  std::vector<int32_t> table;
  std::vector<std::vector<float>> k, v;  // baseline: per layer [kv_heads][keys][head_dim]

  Sequence(bool baseline, int32_t layers, int64_t keys) {
    if (baseline) {
      for (int32_t l = 0; l < layers; ++l) {
        k.push_back(random_floats(kKvHeads * keys * kHeadDim, 2 * l + 1));
        v.push_back(random_floats(kKvHeads * keys * kHeadDim, 2 * l + 2));
      }
      return;
    }
    const auto blocks = static_cast<int32_t>((keys + kBlockSize - 1) / kBlockSize);
    pool = std::make_unique<KvBlockPool>(layers, kKvHeads, kHeadDim, blocks, kBlockSize);
    table.resize(blocks);
    std::iota(table.begin(), table.end(), 0);
    std::mt19937 gen(7);
    std::shuffle(table.begin(), table.end(), gen);
    const std::vector<float> row_k = random_floats(kKvHeads * kHeadDim * keys, 1);
    const std::vector<float> row_v = random_floats(kKvHeads * kHeadDim * keys, 2);
    for (int32_t layer = 0; layer < layers; ++layer) {
      for (int64_t p = 0; p < keys; ++p) {
        pool->write(layer, table[p / kBlockSize], static_cast<int32_t>(p % kBlockSize),
                    row_k.data() + p * kKvHeads * kHeadDim, row_v.data() + p * kKvHeads * kHeadDim);
      }
    }
  }
};

boost::json::object measure(const KernelBenchArgs& a, const std::string& tier, int64_t keys) {
  const bool baseline = tier == kBaseline;
  const int64_t row_bytes = keys * kKvHeads * kHeadDim * 2 * (baseline ? 4 : 2);  // K and V
  const auto layers = a.rows > 0 ? 1 : static_cast<int32_t>(std::max<int64_t>(1, kStreamBytes / row_bytes));
  const Sequence seq(baseline, layers, keys);
  const std::vector<float> q = random_floats(kHeads * kHeadDim, 3);
  std::vector<float> out(q.size());
  const Isa isa = isa_named(tier).value_or(Isa::reference);  // unused by the baseline
  auto row = [&](int layer) {
    if (baseline) return baseline_attention_row(seq.k[layer].data(), seq.v[layer].data(), keys, q.data(), out.data());
    attention_row(*seq.pool, layer, seq.table.data(), keys, q.data(), out.data(), isa);
  };
  boost::json::object o{{"tier", tier}, {"context", keys}, {"kv_bytes", row_bytes}, {"layers_cycled", layers}};
  if (a.rows > 0) {
    row(0);  // warm-up: the scratch buffers
    const auto t0 = std::chrono::steady_clock::now();
    for (int32_t r = 0; r < a.rows; ++r) row(0);
    o["us"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6 / a.rows;
    o["rows_run"] = a.rows + 1;
  } else {
    const Timing t = time_calls(layers, a.samples, row);
    o["us"] = t.us;
    o["cpu_us"] = t.cpu_us;
  }
  o["gbps"] = row_bytes / o["us"].as_double() / 1e3;
  return o;
}

}  // namespace

void add_attention_bench_options(CLI::App& cmd, KernelBenchArgs& a) {
  cmd.add_option("--contexts", a.contexts, "with --attention: context lengths")->capture_default_str();
  cmd.add_option("--tiers", a.tiers,
                 "with --attention: tiers to run, e.g. scalar_f32,avx2 (default: the baseline and every tier here)");
  cmd.add_option("--rows", a.rows, "with --attention: run exactly this many rows per figure (instruction counts)")
      ->check(CLI::Range(1, 1 << 20));
}

void run_attention_bench(const KernelBenchArgs& a, bool json) {
  const std::vector<int32_t> contexts = parse_id_list(a.contexts);
  if (std::any_of(contexts.begin(), contexts.end(), [](int32_t c) { return c < 1; }))
    throw CLI::ValidationError("--contexts", "contexts must be >= 1");
  boost::json::array results;
  for (const std::string& tier : tiers(a.tiers)) {
    for (int32_t keys : contexts) {
      std::cerr << "bench: attention " << tier << " context " << keys << "\n";
      results.push_back(measure(a, tier, keys));
    }
  }
  boost::json::object out{{"heads", kHeads},          {"kv_heads", kKvHeads}, {"head_dim", kHeadDim},
                          {"block_size", kBlockSize}, {"threads", 1},         {"default_tier", isa_name(best_isa())},
                          {"results", results}};
  if (json) return print_json(out);
  std::printf("attention, one row of one layer at 3B shapes, one thread: microseconds (KV GB/s)\n");
  for (const auto& v : results) {
    const auto& o = v.as_object();
    std::printf("%-10s context %6lld: %9.1f us (%.1f GB/s)\n", o.at("tier").as_string().c_str(),
                static_cast<long long>(o.at("context").as_int64()), o.at("us").as_double(), o.at("gbps").as_double());
  }
}

}  // namespace specd::cli
