#include "tools/specd/bench_kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/thread_policy.hpp"
#include "engine/checkpoint/gguf_quantize.hpp"
#include "engine/kernels/linear.hpp"
#include "tools/specd/bench_attention.hpp"
#include "tools/specd/bench_timing.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

using namespace specd::kernels;
using Clock = std::chrono::steady_clock;

constexpr int64_t kL3Bytes = int64_t(32) << 20;  // this machine's L3 (EPYC Zen 4, one CCX)
constexpr int64_t kStreamBytes = 4 * kL3Bytes;   // copies cycled per large shape: never L3 hits

struct Shape {
  std::string model;  // "target", "draft", or "" for the Llama-3.2-sized shapes
  std::string name;
  int64_t in = 0, out = 0;
  int32_t per_step = 0;  // how often one decode step of `model` runs it
  bool large() const { return model.empty(); }
};

// The committed pair (models/{target,draft}/config.json, F16 checkpoints): target hidden
// 384, 6 query and 2 KV heads of 64 (q/k/v fused: 384 -> 640), MLP 1024 (gate and up
// fused: 384 -> 2048), 6 layers, tied vocabulary 2048; draft hidden 128, 4 query and 2 KV
// heads of 32 (128 -> 256), MLP 384, 2 layers. Then Llama-3.2-1B/3B-sized shapes.
std::vector<Shape> bench_shapes() {
  return {{"target", "qkv", 384, 640, 6},     {"target", "o_proj", 384, 384, 6},   {"target", "gate_up", 384, 2048, 6},
          {"target", "down", 1024, 384, 6},   {"target", "lm_head", 384, 2048, 1}, {"draft", "qkv", 128, 256, 2},
          {"draft", "o_proj", 128, 128, 2},   {"draft", "gate_up", 128, 768, 2},   {"draft", "down", 384, 128, 2},
          {"draft", "lm_head", 128, 2048, 1}, {"", "2048x8192", 2048, 8192, 0},    {"", "8192x2048", 8192, 2048, 0},
          {"", "3072x8192", 3072, 8192, 0},   {"", "8192x3072", 8192, 3072, 0}};
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Independent sums keep several loads in flight; a plain function so the loop is
// compiled on raw pointers (inside the lambda it read 11.8 GB/s where this reads 22-27).
[[gnu::noinline]] uint64_t sum_words(const uint64_t* p, int64_t begin, int64_t end) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = begin; i + 4 <= end; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  return s0 + s1 + s2 + s3;
}

// Read bandwidth in GB/s: the best of 5 summing passes over 1 GiB, split over the same
// threads the kernels use.
double measure_read_gbps(KernelThreads& pool) {
  const int64_t words = (int64_t(1) << 30) / 8;
  std::vector<uint64_t> buffer(words, 1);
  std::vector<uint64_t> sums(pool.size() * 8);
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = Clock::now();
    pool.parallel_for(words, 1 << 20, [&](int64_t b, int64_t e) {
      sums[(b * pool.size() / words) * 8] = sum_words(buffer.data(), b, e);  // one cache line per part
    });
    best = std::max(best, words * 8.0 / seconds_since(t0) / 1e9);
  }
  volatile uint64_t sink = sums[0];
  (void)sink;
  return best;
}

// Microseconds of one empty parallel_for over all threads: what a kernel call pays to
// hand work to the workers (woken from their short spin or from the futex).
double parallel_for_us(KernelThreads& pool, int64_t gap_us) {
  constexpr int kCalls = 2000;
  std::atomic<int64_t> sink{0};
  double total = 0;
  for (int i = 0; i < kCalls; ++i) {
    const auto t0 = Clock::now();
    pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t) { sink += b; });
    total += seconds_since(t0);
    const auto until = Clock::now() + std::chrono::microseconds(gap_us);  // the caller's own work
    while (Clock::now() < until) {
    }
  }
  return total / kCalls * 1e6;
}

struct Row {
  const Shape* shape = nullptr;
  std::string kind;  // a dtype name, or "openblas_f32"
  double bytes = 0;  // one copy of the weights as the kernel reads them
  int copies = 1;
  std::vector<int64_t> m;
  std::vector<double> us, cpu_us;
  void add(Timing t) {
    us.push_back(t.us);
    cpu_us.push_back(t.cpu_us);
  }
};

std::vector<int64_t> m_list(const Shape& s, bool prefill) {
  std::vector<int64_t> m{1, 2, 4, 5, 8, 16};
  if (prefill && s.large()) m.insert(m.end(), {64, 256});
  return m;
}

int copies_for(const Shape& s, double bytes) {
  return s.large() ? static_cast<int>(std::ceil(kStreamBytes / bytes)) : 1;  // the pair's shapes live in L3
}

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(gen);
  return v;
}

// The GGUF type of the K-quant kinds benchmarked (the blocks `specd quantize` writes).
GgmlType ggml_type(Dtype d) {
  switch (d) {
    case Dtype::q4_k:
      return GgmlType::q4_k;
    case Dtype::q5_k:
      return GgmlType::q5_k;
    case Dtype::q6_k:
      return GgmlType::q6_k;
    default:
      throw std::invalid_argument(std::string("bench --kernels: no K-quant writer for ") + dtype_name(d));
  }
}

Row bench_packed(const Shape& s, Dtype d, const KernelBenchArgs& a, KernelThreads& pool) {
  const std::vector<float> f = random_floats(s.out * s.in, 1);
  const bool quantized = is_quantized(d);
  std::vector<uint16_t> h(d == Dtype::f32 || quantized ? 0 : f.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = d == Dtype::f16 ? float_to_f16(f[i]) : float_to_bf16(f[i]);
  // The block formats: llama.cpp's blocks, quantized once and packed per copy; their
  // bytes are those blocks' (scales included).
  const size_t row_bytes = quantized ? stored_row_bytes(d, s.in) : 0;
  std::vector<std::byte> blocks(s.out * row_bytes);
  for (int64_t o = 0; quantized && o < s.out; ++o) {
    std::byte* row = blocks.data() + o * row_bytes;
    if (is_nibble_format(d)) {
      quantize_gguf_row(f.data() + o * s.in, s.in, ggml_type(d), row);
    } else {
      quantize_row(f.data() + o * s.in, s.in, d, row);
    }
  }
  const void* src = f.data();
  if (quantized) src = blocks.data();
  if (!h.empty()) src = h.data();
  Row r{&s, dtype_name(d), quantized ? static_cast<double>(blocks.size()) : s.out * s.in * double(dtype_size(d))};
  r.copies = copies_for(s, r.bytes);
  std::vector<PackedWeight> w;
  for (int c = 0; c < r.copies; ++c) w.push_back(PackedWeight::pack(src, s.out, s.in, d));
  r.m = m_list(s, a.prefill);
  const std::vector<float> x = random_floats(r.m.back() * s.in, 2);
  std::vector<float> y(r.m.back() * s.out);
  for (int64_t m : r.m) {
    r.add(time_calls(r.copies, a.samples, [&](int c) { linear(w[c], x.data(), m, y.data(), &pool); }));
  }
  return r;
}

// OpenBLAS on a row-major F32 copy: sgemv for one row, sgemm (X * W^T) for more.
Row bench_openblas(const Shape& s, const KernelBenchArgs& a) {
  Row r{&s, "openblas_f32", s.out * s.in * 4.0};
  r.copies = copies_for(s, r.bytes);
  std::vector<std::vector<float>> w;
  for (int c = 0; c < r.copies; ++c) w.push_back(random_floats(s.out * s.in, 3 + c));
  r.m = m_list(s, a.prefill);
  const std::vector<float> x = random_floats(r.m.back() * s.in, 2);
  std::vector<float> y(r.m.back() * s.out);
  const auto in = static_cast<int>(s.in), out = static_cast<int>(s.out);
  for (int64_t m : r.m) {
    r.add(time_calls(r.copies, a.samples, [&](int c) {
      if (m == 1)
        return cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1, w[c].data(), in, x.data(), 1, 0, y.data(), 1);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), out, in, 1, x.data(), in, w[c].data(),
                  in, 0, y.data(), out);
    }));
  }
  return r;
}

bool wanted(const KernelBenchArgs& a, const std::string& kind) {
  if (a.kinds.empty()) return true;
  const std::string list = "," + a.kinds + ",";
  return list.find("," + kind + ",") != std::string::npos;
}

double ratio_at(const Row& r, int64_t m) {
  for (size_t i = 0; i < r.m.size(); ++i) {
    if (r.m[i] == m) return r.us[i] / r.us[0];
  }
  return 0;
}

boost::json::object row_json(const Row& r, double read_gbps) {
  boost::json::array ratio;
  for (double us : r.us) ratio.push_back(us / r.us[0]);
  const double gbps = r.bytes / (r.us[0] * 1e-6) / 1e9;
  boost::json::object o{{"model", r.shape->model},
                        {"shape", r.shape->name},
                        {"in", r.shape->in},
                        {"out", r.shape->out},
                        {"kind", r.kind},
                        {"bytes", r.bytes},
                        {"copies", r.copies},
                        {"streamed", r.shape->large()},
                        {"m", boost::json::value_from(r.m)},
                        {"us", boost::json::value_from(r.us)},
                        {"cpu_us", boost::json::value_from(r.cpu_us)},
                        {"ratio", ratio},
                        {"gbps_m1", gbps},
                        {"fraction_of_read_m1", gbps / read_gbps}};
  if (r.shape->large()) {
    o["t5_over_t1"] = ratio_at(r, 5);
    o["t8_over_t1"] = ratio_at(r, 8);
    o["t16_over_t1"] = ratio_at(r, 16);
  }
  return o;
}

// Microseconds of one decode step's linear layers of each committed model, per M.
boost::json::array step_sums(const std::vector<Row>& rows) {
  boost::json::array out;
  for (const char* model : {"target", "draft"}) {
    for (const char* kind : {"f16", "bf16", "openblas_f32"}) {
      std::vector<double> us;
      for (const Row& r : rows) {
        if (r.shape->model != model || r.kind != kind) continue;
        us.resize(r.us.size(), 0.0);
        for (size_t i = 0; i < r.us.size(); ++i) us[i] += r.shape->per_step * r.us[i];
      }
      out.push_back({{"model", model},
                     {"kind", kind},
                     {"m", boost::json::value_from(m_list({}, false))},
                     {"linear_us_per_step", boost::json::value_from(us)}});
    }
  }
  return out;
}

void print_table(const boost::json::object& out) {
  std::printf("microseconds per call, wall/cpu; read %.1f GB/s, %lld threads, kernels %s\n",
              out.at("read_gbps").as_double(), static_cast<long long>(out.at("threads").as_int64()),
              out.at("isa").as_string().c_str());
  for (const auto& v : out.at("results").as_array()) {
    const auto& o = v.as_object();
    std::printf("%-7s %-10s %-13s", o.at("model").as_string().c_str(), o.at("shape").as_string().c_str(),
                o.at("kind").as_string().c_str());
    const auto& m = o.at("m").as_array();
    const auto& us = o.at("us").as_array();
    const auto& cpu = o.at("cpu_us").as_array();
    for (size_t i = 0; i < m.size(); ++i) {
      std::printf(" M%lld %.1f/%.1f", static_cast<long long>(m[i].as_int64()), us[i].as_double(), cpu[i].as_double());
    }
    std::printf("  %.1f GB/s (%.0f%%)\n", o.at("gbps_m1").as_double(), 100 * o.at("fraction_of_read_m1").as_double());
  }
}

}  // namespace

void add_kernel_bench_options(CLI::App& cmd, KernelBenchArgs& a) {
  cmd.add_flag("--kernels", a.enabled, "the linear kernels on the committed pair's and Llama-3.2-sized shapes");
  cmd.add_flag("--prefill", a.prefill, "with --kernels: also M = 64 and 256 on the large shapes");
  cmd.add_option("--samples", a.samples, "with --kernels: timed samples per figure (median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--kinds", a.kinds,
                 "with --kernels: only these, comma-separated (bf16,f16,f32,q8_0,q4_0,q4_k,q5_k,q6_k,openblas_f32; "
                 "default all)")
      ->check([](const std::string& list) {
        const std::string known = ",bf16,f16,f32,q8_0,q4_0,q4_k,q5_k,q6_k,openblas_f32,";
        for (size_t b = 0; b <= list.size();) {
          const size_t e = std::min(list.find(',', b), list.size());
          if (known.find("," + list.substr(b, e - b) + ",") == std::string::npos) {
            return "unknown kind '" + list.substr(b, e - b) + "'";
          }
          b = e + 1;
        }
        return std::string();
      });
  cmd.add_flag("--attention", a.attention, "with --kernels: the attention kernels at Llama-3.2-3B shapes instead");
  add_attention_bench_options(cmd, a);
}

void run_kernel_bench(const KernelBenchArgs& a, int32_t threads, bool json) {
  if (a.attention) return run_attention_bench(a, json);
  threads = std::max(threads, 1);
  KernelThreads pool(threads);
  set_blas_threads(threads);
  std::cerr << "bench: read bandwidth\n";
  const double read_start = measure_read_gbps(pool);
  std::vector<Shape> shapes = bench_shapes();
  std::vector<Row> rows;
  for (const Shape& s : shapes) {
    std::cerr << "bench: " << (s.large() ? "" : s.model + " ") << s.name << "\n";
    std::vector<Dtype> dtypes{Dtype::bf16, Dtype::f16};
    if (s.large()) {
      dtypes.insert(dtypes.end(), {Dtype::f32, Dtype::q8_0, Dtype::q4_0, Dtype::q4_k, Dtype::q5_k, Dtype::q6_k});
    }
    for (Dtype d : dtypes) {
      if (wanted(a, dtype_name(d))) rows.push_back(bench_packed(s, d, a, pool));
    }
    if (wanted(a, "openblas_f32")) rows.push_back(bench_openblas(s, a));
  }
  const double read_end = measure_read_gbps(pool);
  const double read = std::max(read_start, read_end);  // the fastest traffic seen is the limit
  boost::json::array results;
  for (const Row& r : rows) results.push_back(row_json(r, read));
  boost::json::object handoff;  // gaps inside a step (spin catches them) and past the spin
  if (threads > 1) handoff = {{"gap_10us", parallel_for_us(pool, 10)}, {"gap_200us", parallel_for_us(pool, 200)}};
  boost::json::object out{{"threads", threads},
                          {"isa", isa_name(best_isa())},
                          {"parallel_for_us", handoff},
                          {"read_gbps", read},
                          {"read_gbps_start", read_start},
                          {"read_gbps_end", read_end},
                          {"stream_bytes", kStreamBytes},
                          {"results", results},
                          {"committed_pair_steps", step_sums(rows)}};
  if (json) return print_json(out);
  print_table(out);
}

}  // namespace specd::cli
