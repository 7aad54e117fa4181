#include "tools/specd/bench_model.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <span>

#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double peak_rss_gb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024 / 1e9;  // ru_maxrss is in KiB on Linux
}

// Copy and read bandwidth of this machine in GB/s (best of several passes over 1 GiB).
// Copy counts the bytes read plus the bytes written, as STREAM does; read is a plain
// summing pass on all intra-op threads; gemv reads the buffer as a matrix times a
// vector, the kernel of a decode step (one core pulled 27 GB/s that way, the others 10-20).
struct Bandwidth {
  double copy_gbps = 0, memcpy_gbps = 0, read_gbps = 0, gemv_gbps = 0;
  double best() const { return std::max({copy_gbps, memcpy_gbps, read_gbps, gemv_gbps}); }
};

uint64_t read_all(const at::Tensor& words) {
  const auto* p = static_cast<const uint64_t*>(words.data_ptr());
  std::atomic<uint64_t> total{0};
  at::parallel_for(0, words.numel(), int64_t(1) << 20, [&](int64_t begin, int64_t end) {
    uint64_t a = 0, b = 0, c = 0, d = 0;  // independent sums keep several loads in flight
    int64_t i = begin;
    for (; i + 4 <= end; i += 4) a += p[i], b += p[i + 1], c += p[i + 2], d += p[i + 3];
    for (; i < end; ++i) a += p[i];
    total += a + b + c + d;
  });
  return total;
}

Bandwidth measure_bandwidth() {
  constexpr int64_t kBytes = int64_t(1) << 30;
  constexpr int kPasses = 5;
  at::Tensor src = at::ones({kBytes / 4}, at::kFloat), dst = at::zeros({kBytes / 4}, at::kFloat);
  const at::Tensor words = src.view(at::kLong), matrix = src.view({-1, 4096}), vector = at::ones({4096});
  Bandwidth b;
  for (int i = 0; i < kPasses; ++i) {
    auto t0 = Clock::now();
    dst.copy_(src);  // libtorch's parallel copy: all intra-op threads
    b.copy_gbps = std::max(b.copy_gbps, 2.0 * kBytes / seconds_since(t0) / 1e9);
    t0 = Clock::now();
    std::memcpy(dst.data_ptr<float>(), src.data_ptr<float>(), kBytes);  // one thread
    b.memcpy_gbps = std::max(b.memcpy_gbps, 2.0 * kBytes / seconds_since(t0) / 1e9);
    t0 = Clock::now();
    volatile uint64_t sink = read_all(words);
    (void)sink;
    b.read_gbps = std::max(b.read_gbps, 1.0 * kBytes / seconds_since(t0) / 1e9);
    t0 = Clock::now();
    at::mv(matrix, vector);
    b.gemv_gbps = std::max(b.gemv_gbps, 1.0 * kBytes / seconds_since(t0) / 1e9);
  }
  return b;
}

struct Figures {
  LoadInfo load;
  WeightFormat weights = WeightFormat::stored;
  double packed_bytes = 0;  // the inference weights in memory
  int64_t parameters = 0;
  double weight_bytes = 0;        // read once per decode step, whatever the batch
  double kv_bytes_per_token = 0;  // per sequence and context position
  double prefill_seconds = 0;
  double decode_ms = 0, batch_step_ms = 0;
  std::vector<double> verify_ms;  // per ModelBenchArgs::verify_rows
  ForwardProfile decode_parts;    // the decode steps' passes, warm-up included
  std::vector<ForwardProfile> verify_parts;
  double decode_context = 0;  // mean context length during the timed decode steps
};

// Weights a decode step reads, in their stored dtype: every matrix once; the embedding
// table only as lm_head when tied (the lookup reads one row).
double weight_bytes_per_step(const LlamaModel& model) {
  const InferenceWeights& w = *model.inference_weights();
  double bytes = static_cast<double>(w.bytes());
  if (!model.config().tie_word_embeddings) bytes -= static_cast<double>(w.embed.bytes());
  return bytes;
}

// Times `steps` greedy decode steps over the given slots, the median of `runs` runs,
// each starting from the same cache lengths. Returns ms per step.
double time_decode(LlamaModel& model, KvCache& cache, const std::vector<int32_t>& slots, int64_t start,
                   const ModelBenchArgs& a) {
  const int64_t B = static_cast<int64_t>(slots.size());
  at::Tensor next = at::full({B, 1}, 1, at::kLong);
  auto step = [&] {
    at::Tensor logits = model.forward({next, slots, std::vector<int64_t>(B, 1)}, cache, LogitsFor::last_position);
    next = logits.argmax(-1).view({B, 1});
  };
  std::vector<double> runs;
  for (int32_t r = 0; r <= a.runs; ++r) {                // run 0 warms up
    for (int32_t s : slots) cache.set_length(s, start);  // rows 1.. hold copies of row 0 up to start
    const auto t0 = Clock::now();
    for (int32_t i = 0; i < a.steps; ++i) step();
    if (r > 0) runs.push_back(seconds_since(t0) * 1e3 / a.steps);
  }
  return median(runs);
}

// One pass of `rows` tokens of one sequence after `start` cached ones (logits at every
// row, as verification needs), the median of runs. Returns ms.
double time_verify(LlamaModel& model, KvCache& cache, int32_t slot, int64_t start, int64_t rows,
                   const ModelBenchArgs& a) {
  const at::Tensor tokens = at::full({1, rows}, 1, at::kLong);
  std::vector<double> runs;
  for (int32_t r = 0; r <= a.runs; ++r) {  // run 0 warms up
    cache.set_length(slot, start);
    const auto t0 = Clock::now();
    model.forward({tokens, {slot}, {rows}}, cache, LogitsFor::all_positions);
    if (r > 0) runs.push_back(seconds_since(t0) * 1e3);
  }
  return median(runs);
}

Figures measure_model(const std::string& dir, WeightFormat weights, const ModelBenchArgs& a) {
  Figures f;
  std::cerr << "bench: loading " << dir << " (weights " << weight_format_name(weights) << ")\n";
  std::shared_ptr<LlamaModel> model = load_model(dir, weights, &f.load);
  torch::InferenceMode guard;
  const ModelConfig& c = model->config();
  f.parameters = model->parameter_count();
  f.weight_bytes = weight_bytes_per_step(*model);
  f.weights = weights;
  f.packed_bytes = static_cast<double>(model->inference_weights()->bytes());
  f.kv_bytes_per_token = static_cast<double>(KvCache::bytes_per_token(c));
  int64_t most_rows = 1;
  for (int64_t rows : a.verify_rows) most_rows = std::max(most_rows, rows);
  const int64_t max_seq = a.prompt_len + std::max<int64_t>(a.steps + 1, most_rows);
  KvCache cache(c, a.batch, max_seq, KvCache::blocks_to_hold(a.batch, max_seq));
  std::vector<int32_t> slots;
  for (int32_t b = 0; b < a.batch; ++b) slots.push_back(b);  // the cache holds exactly these

  at::Tensor prompt = at::randint(c.vocab_size, {1, a.prompt_len}, at::TensorOptions(at::kLong));
  std::vector<double> prefill;
  for (int32_t r = 0; r < a.runs; ++r) {
    cache.truncate_to(slots[0], 0);
    const auto t0 = Clock::now();
    model->forward({prompt, {slots[0]}, {a.prompt_len}}, cache, LogitsFor::last_position);
    prefill.push_back(seconds_since(t0));
    std::cerr << "bench: prefill " << prefill.back() << " s\n";
  }
  f.prefill_seconds = median(prefill);
  f.decode_context = a.prompt_len + (a.steps - 1) / 2.0;
  ForwardRunner& runner = model->runner();
  runner.set_profiling(true);
  f.decode_ms = time_decode(*model, cache, {slots[0]}, a.prompt_len, a);
  f.decode_parts = runner.profile();
  std::cerr << "bench: decode " << f.decode_ms << " ms/token\n";
  for (int64_t rows : a.verify_rows) {
    runner.set_profiling(true);
    f.verify_ms.push_back(time_verify(*model, cache, slots[0], a.prompt_len, rows, a));
    f.verify_parts.push_back(runner.profile());
    std::cerr << "bench: verify " << rows << " rows " << f.verify_ms.back() << " ms\n";
  }
  runner.set_profiling(false);
  if (a.batch > 1) {
    // Every row starts from the same prefilled prompt: copy slot 0's keys and values
    // (the cost of a step depends on the lengths, the copy saves B - 1 prefills).
    for (int32_t s : slots) {
      if (s == slots[0]) continue;
      cache.set_length(s, a.prompt_len);
      const std::span<const int32_t> from = cache.block_table(slots[0]), to = cache.block_table(s);
      for (size_t b = 0; b < to.size(); ++b) cache.pool().copy_block(from[b], to[b]);
    }
    f.batch_step_ms = time_decode(*model, cache, slots, a.prompt_len, a);
    std::cerr << "bench: batch " << a.batch << " decode " << f.batch_step_ms << " ms/step\n";
  }
  return f;
}

// Milliseconds a pass in each part (ForwardProfile).
boost::json::object parts_json(const ForwardProfile& p) {
  const double per_pass = p.passes > 0 ? 1e3 / static_cast<double>(p.passes) : 0.0;
  return {{"pass", p.seconds * per_pass},
          {"linear", p.linear * per_pass},
          {"attention", p.attention * per_pass},
          {"other", p.other() * per_pass}};
}

boost::json::object figures_json(const std::string& dir, const Figures& f, const ModelBenchArgs& a, double gbps) {
  const double kv_single = f.kv_bytes_per_token * f.decode_context;
  const double bound_single_ms = (f.weight_bytes + kv_single) / (gbps * 1e9) * 1e3;
  boost::json::object o{{"dir", dir},
                        {"weights", weight_format_name(f.weights)},
                        {"packed_gb", f.packed_bytes / 1e9},
                        {"parameters", f.parameters},
                        {"load_seconds", f.load.seconds},
                        {"file_gb", f.load.file_bytes / 1e9},
                        {"shards", f.load.shard_count},
                        {"prompt_tokens", a.prompt_len},
                        {"prefill_seconds", f.prefill_seconds},
                        {"prefill_tokens_per_second", a.prompt_len / f.prefill_seconds},
                        {"decode_context", f.decode_context},
                        {"weight_gb_per_step", f.weight_bytes / 1e9},
                        {"kv_gb_per_step", kv_single / 1e9},
                        {"decode_ms_per_token", f.decode_ms},
                        {"bound_ms_per_token", bound_single_ms},
                        {"fraction_of_bound", bound_single_ms / f.decode_ms},
                        {"decode_parts_ms", parts_json(f.decode_parts)}};
  boost::json::array verify;
  for (size_t i = 0; i < f.verify_ms.size(); ++i) {
    verify.push_back({{"rows", a.verify_rows[i]},
                      {"ms", f.verify_ms[i]},
                      {"steps", f.verify_ms[i] / f.decode_ms},
                      {"parts_ms", parts_json(f.verify_parts[i])}});
  }
  o["verify"] = std::move(verify);
  if (a.batch > 1) {
    const double bound_batch_ms = (f.weight_bytes + a.batch * kv_single) / (gbps * 1e9) * 1e3;
    o["batch"] = a.batch;
    o["batch_step_ms"] = f.batch_step_ms;
    o["batch_ms_per_token"] = f.batch_step_ms / a.batch;
    o["batch_bound_step_ms"] = bound_batch_ms;
    o["batch_fraction_of_bound"] = bound_batch_ms / f.batch_step_ms;
  }
  return o;
}

}  // namespace

void add_model_bench_options(CLI::App& cmd, ModelBenchArgs& a) {
  cmd.add_option("--batch", a.batch, "sequences in the batched decode measurement (1: skip it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd.add_option("--prompt-len", a.prompt_len, "prefill length")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd.add_option("--steps", a.steps, "timed decode steps per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd.add_option("--runs", a.runs, "timed runs; the median is reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd.add_option("--verify-rows", a.verify_rows, "rows of the timed one-sequence verify passes")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
}

void run_model_bench(const PairArgs& pair, const ModelBenchArgs& a, bool json) {
  const ThreadPolicy threads = apply_cli_thread_policy(pair.threads);
  // The process's own floor before any weights: the libraries libtorch loads and their
  // static initialisation (`specd --help` alone peaks near it).
  const double floor_rss = peak_rss_gb();
  const Figures target = measure_model(pair.model, weight_format_of(pair.weights), a);
  const double target_rss = peak_rss_gb();
  Figures draft;
  if (!pair.draft.empty()) {
    draft =
        measure_model(pair.draft, weight_format_of(pair.draft_weights.empty() ? pair.weights : pair.draft_weights), a);
  }
  const double rss = peak_rss_gb();  // before the bandwidth buffers, which are not the model's
  std::cerr << "bench: measuring memory bandwidth\n";
  const Bandwidth bw = measure_bandwidth();
  const double gbps = bw.best();  // the fastest memory traffic seen is the physical limit
  boost::json::object out{{"threads", threads_json(threads)},
                          {"copy_gbps", bw.copy_gbps},
                          {"memcpy_gbps", bw.memcpy_gbps},
                          {"read_gbps", bw.read_gbps},
                          {"gemv_gbps", bw.gemv_gbps},
                          {"bound_gbps", gbps},
                          {"peak_rss_gb_before_load", floor_rss},
                          {"peak_rss_gb_target", target_rss},
                          {"peak_rss_gb", rss},
                          {"target", figures_json(pair.model, target, a, gbps)}};
  if (!pair.draft.empty()) {
    out["draft"] = figures_json(pair.draft, draft, a, gbps);
    out["c"] = draft.decode_ms / target.decode_ms;
  }
  if (json) {
    print_json(out);
    return;
  }
  for (const char* role : {"target", "draft"}) {
    if (!out.contains(role)) continue;
    const auto& o = out.at(role).as_object();
    std::printf("%s %s (%s, %.2f GB): load %.1f s, prefill %.1f tok/s, decode %.1f ms/token (bound %.1f ms, %.0f%%)\n",
                role, o.at("dir").as_string().c_str(), o.at("weights").as_string().c_str(),
                o.at("packed_gb").as_double(), o.at("load_seconds").as_double(),
                o.at("prefill_tokens_per_second").as_double(), o.at("decode_ms_per_token").as_double(),
                o.at("bound_ms_per_token").as_double(), 100 * o.at("fraction_of_bound").as_double());
    for (const auto& v : o.at("verify").as_array()) {
      std::printf("  verify %lld rows: %.1f ms, %.2f steps\n", static_cast<long long>(v.at("rows").as_int64()),
                  v.at("ms").as_double(), v.at("steps").as_double());
    }
  }
  std::printf("peak RSS %.2f GB, bandwidth %.1f GB/s, %d threads\n", rss, gbps, at::get_num_threads());
  if (out.contains("c")) std::printf("c = %.3f\n", out.at("c").as_double());
}

}  // namespace specd::cli
