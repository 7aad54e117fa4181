#include "tools/specd/bench_concurrency.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

#include "actors/engine.hpp"
#include "engine/cost_calibration.hpp"
#include "engine/spec_generation.hpp"
#include "engine/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

struct LevelResult {
  double seconds = 0;
  int64_t tokens = 0;
  int64_t drafted = 0, accepted = 0;
  std::vector<double> ttft_ms, itl_ms;
  int errors = 0;
};

// One client: requests back to back; records TTFT and per-token gaps from burst times.
boost::asio::awaitable<void> client(Engine& engine, const std::vector<std::string>& prompts, size_t first,
                                    int32_t count, int32_t max_tokens, bool spec, LevelResult& out, std::mutex& mutex) {
  for (int32_t i = 0; i < count; ++i) {
    GenerateRequest r;
    r.prompt = prompts[(first + static_cast<size_t>(i)) % prompts.size()];
    r.max_tokens = max_tokens;
    r.ignore_eos = true;  // equal lengths: modes compare on the same work
    r.spec.enabled = spec;
    r.spec.adaptive = true;
    const auto submitted = Clock::now();
    auto last = submitted;
    std::vector<double> gaps;
    std::optional<double> ttft;
    GenerateResult res;
    try {
      res = co_await engine.generate(r, [&](const Burst& b) {
        const auto now = Clock::now();
        if (b.token_ids.empty()) return;
        if (!ttft) {
          ttft = ms_since(submitted, now);
        } else {
          // A burst of n tokens after a gap g: each token waited g / n on average.
          const double per_token = ms_since(last, now) / static_cast<double>(b.token_ids.size());
          gaps.insert(gaps.end(), b.token_ids.size(), per_token);
        }
        last = now;
      });
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex);
      ++out.errors;
      std::cerr << "bench: request failed: " << e.what() << "\n";
      continue;
    }
    std::lock_guard lock(mutex);
    out.tokens += static_cast<int64_t>(res.token_ids.size());
    out.drafted += res.spec.drafted;
    out.accepted += res.spec.accepted;
    if (ttft) out.ttft_ms.push_back(*ttft);
    out.itl_ms.insert(out.itl_ms.end(), gaps.begin(), gaps.end());
  }
}

LevelResult run_level(Engine& engine, boost::asio::io_context& io, const std::vector<std::string>& prompts,
                      int32_t clients, int32_t per_client, int32_t max_tokens, bool spec) {
  LevelResult out;
  std::mutex mutex;
  std::vector<std::future<void>> done;
  const auto t0 = Clock::now();
  for (int32_t c = 0; c < clients; ++c) {
    done.push_back(boost::asio::co_spawn(
        io, client(engine, prompts, static_cast<size_t>(c) * 7, per_client, max_tokens, spec, out, mutex),
        boost::asio::use_future));
  }
  for (auto& f : done) f.get();
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

double throughput(const LevelResult& r) { return r.tokens / r.seconds; }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The run with the median throughput (the upper middle one for an even count).
const LevelResult& median_run(const std::vector<LevelResult>& runs) {
  std::vector<const LevelResult*> sorted;
  for (const auto& r : runs) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return throughput(*a) < throughput(*b); });
  return *sorted[sorted.size() / 2];
}

boost::json::object level_json(const LevelResult& r) {
  return {{"tokens_per_second", r.tokens / r.seconds}, {"tokens", r.tokens}, {"seconds", r.seconds},
          {"ttft_ms_p50", percentile(r.ttft_ms, 0.5)}, {"ttft_ms_p99", percentile(r.ttft_ms, 0.99)},
          {"itl_ms_p50", percentile(r.itl_ms, 0.5)},   {"itl_ms_p99", percentile(r.itl_ms, 0.99)},
          {"acceptance_rate", r.drafted ? static_cast<double>(r.accepted) / r.drafted : 0.0},
          {"errors", r.errors}};
}

// Tokens/s of the same prompts one at a time through generate_speculative, without actors.
// `meter` carries the calibrated round costs across calls, as one engine's would.
double engine_level_tokens_per_second(ModelPair& pair, CostMeter& meter, const std::vector<std::string>& prompts,
                                      int32_t max_tokens, bool spec) {
  SpecModels models = pair.models();
  int64_t tokens = 0;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    SpecRequest r;
    r.prompt = pair.tokenizer->encode(prompts[i], true);
    r.max_tokens = max_tokens;
    r.spec = pair.spec;
    r.spec.enabled = spec;
    tokens += static_cast<int64_t>(generate_speculative(models, {r}, nullptr, &meter).front().tokens.size());
  }
  return static_cast<double>(tokens) / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

void add_concurrency_bench_options(CLI::App& cmd, ConcurrencyBenchArgs& args) {
  cmd.add_option("--concurrency", args.levels, "through the actors at these client counts, e.g. 1,2,4,8,16,32");
  cmd.add_option("--requests-per-client", args.requests_per_client, "requests each client sends (0: automatic)")
      ->check(CLI::Range(0, 100000));
  cmd.add_option("--trace", args.trace_path, "write a Chrome trace of the speculation-on runs to this file");
  cmd.add_option("--repeat", args.repeat, "interleaved runs of each mode per level; medians are reported")
      ->check(CLI::Range(1, 100));
}

void run_concurrency_bench(const PairArgs& pair, const ConcurrencyBenchArgs& args, const std::vector<std::string>& prompts,
                           int32_t max_tokens, bool json) {
  const std::vector<int32_t> levels = parse_id_list(args.levels);
  const int32_t most = *std::max_element(levels.begin(), levels.end());
  EngineConfig config;
  config.target_dir = pair.model.empty() ? default_target_dir() : std::filesystem::path(pair.model);
  config.draft_dir = pair.draft.empty() ? default_models_dir() / "draft" : std::filesystem::path(pair.draft);
  config.max_batch = std::max(most, 1);
  config.max_seq_len = pair.max_seq_len;
  config.trace = !args.trace_path.empty();
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  boost::json::array rows;
  {
    Engine overlapped(io.get_executor(), config);
    EngineConfig serial_config = config;
    serial_config.overlap = false;
    serial_config.trace = false;
    Engine serial(io.get_executor(), serial_config);
    for (int32_t clients : levels) {
      const int32_t per_client = args.requests_per_client > 0 ? args.requests_per_client : std::max(2, 8 / clients);
      // Modes interleaved, so drift in the machine's speed (other tenants, steal time)
      // hits all of them alike; each mode reports its median run.
      std::vector<LevelResult> offs, ons, serials;
      std::vector<double> paired;
      for (int32_t r = 0; r < args.repeat; ++r) {
        offs.push_back(run_level(overlapped, io, prompts, clients, per_client, max_tokens, false));
        ons.push_back(run_level(overlapped, io, prompts, clients, per_client, max_tokens, true));
        serials.push_back(run_level(serial, io, prompts, clients, per_client, max_tokens, true));
        paired.push_back(throughput(ons.back()) / throughput(offs.back()));
      }
      const LevelResult& off = median_run(offs);
      const LevelResult& on = median_run(ons);
      const double ratio = throughput(on) / throughput(off);
      rows.push_back({{"concurrency", clients}, {"requests", clients * per_client}, {"spec_off", level_json(off)},
                      {"spec_on", level_json(on)}, {"spec_on_no_overlap", level_json(median_run(serials))},
                      {"spec_on_over_off", ratio},
                      {"spec_on_over_off_per_repeat", boost::json::value_from(paired)},
                      {"spec_on_over_off_paired_median", median(paired)}});
      std::cerr << "bench: concurrency " << clients << " spec on/off throughput " << ratio << "\n";
    }
    if (config.trace) overlapped.write_trace(args.trace_path);
    auto stop = [](Engine& e) -> boost::asio::awaitable<void> { co_await e.stop(std::chrono::seconds(10)); };
    boost::asio::co_spawn(io, stop(overlapped), boost::asio::use_future).get();
    boost::asio::co_spawn(io, stop(serial), boost::asio::use_future).get();
  }
  work.reset();
  io_thread.join();
  PairArgs auto_k = pair;
  auto_k.k = "auto";
  ModelPair engine_pair = load_pair(auto_k);
  SpecModels engine_models = engine_pair.models();
  CostMeter off_meter, on_meter;
  on_meter.rounds = calibrate_round_costs(engine_models, {1, engine_pair.spec.k_max, 2.0});
  std::vector<double> engine_ons, engine_offs;
  for (int32_t r = 0; r < args.repeat; ++r) {
    engine_offs.push_back(engine_level_tokens_per_second(engine_pair, off_meter, prompts, max_tokens, false));
    engine_ons.push_back(engine_level_tokens_per_second(engine_pair, on_meter, prompts, max_tokens, true));
  }
  const double engine_on = median(engine_ons);
  const double engine_off = median(engine_offs);
  double actors_c1 = 0;
  for (const auto& r : rows) {
    if (r.as_object().at("concurrency").as_int64() == 1) actors_c1 = r.as_object().at("spec_on_over_off").as_double();
  }
  boost::json::object out{{"max_tokens", max_tokens},
                          {"prompts", prompts.size()},
                          {"engine_level_speedup", engine_on / engine_off},
                          {"engine_level_tokens_per_second", {{"spec_on", engine_on}, {"spec_off", engine_off}}},
                          {"actors_c1_over_engine_level", actors_c1 > 0 ? actors_c1 / (engine_on / engine_off) : 0.0},
                          {"levels", rows}};
  if (json) {
    print_json(out);
    return;
  }
  std::printf("%5s %12s %12s %8s %10s %10s %10s %10s\n", "conc", "off tok/s", "on tok/s", "on/off", "ttft p50", "ttft p99",
              "itl p50", "itl p99");
  for (const auto& r : rows) {
    const auto& o = r.as_object();
    const auto& on = o.at("spec_on").as_object();
    std::printf("%5lld %12.1f %12.1f %8.2f %10.1f %10.1f %10.2f %10.2f\n",
                static_cast<long long>(o.at("concurrency").as_int64()),
                o.at("spec_off").as_object().at("tokens_per_second").as_double(), on.at("tokens_per_second").as_double(),
                o.at("spec_on_over_off").as_double(), on.at("ttft_ms_p50").as_double(), on.at("ttft_ms_p99").as_double(),
                on.at("itl_ms_p50").as_double(), on.at("itl_ms_p99").as_double());
  }
}

}  // namespace specd::cli
