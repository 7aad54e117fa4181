#include "tools/specd/bench_concurrency.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "actors/engine.hpp"
#include "engine/tokenizer/tokenizer.hpp"
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
  double seconds = 0;  // the measured window
  int64_t tokens = 0;  // emitted inside the window
  int64_t drafted = 0, accepted = 0;
  std::vector<double> ttft_ms, itl_ms;
  int errors = 0;
  double steal = -1;                        // share of the CPU the hypervisor took during the window; -1: unknown
  std::vector<RoundTally> plain, drafting;  // the engine's decode rounds inside the window, by rows
};

// What one run of a level does.
struct RunShape {
  int32_t clients = 1;
  int32_t per_client = 0;  // fixed-count mode: requests per client (seconds == 0)
  double seconds = 0;      // steady-state mode: the measured window
  double warmup = 0;       // steady-state mode: seconds before the window opens
  int32_t max_tokens = 48;
  double length_spread = 0;  // request i of client c asks for max_tokens x (1 +- spread)
  bool spec = false;
  TreeSettings tree;  // the speculative requests' (--tree)
};

// Request lengths spread uniformly over max_tokens x [1 - spread, 1 + spread], from a
// hash of (client, request), so every mode and repeat gets the same sequence of work.
// Equal lengths keep a target-only batch in lockstep: its requests finish in the same
// round and the newcomers are prefilled in one pass, a regularity chat traffic lacks.
int32_t request_length(const RunShape& shape, int32_t client, int32_t index) {
  uint64_t h = (static_cast<uint64_t>(client) << 32 | static_cast<uint32_t>(index)) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  const double unit = static_cast<double>(h % 10007) / 10006.0;  // [0, 1]
  const double scale = 1 + shape.length_spread * (2 * unit - 1);
  return std::max(1, static_cast<int32_t>(shape.max_tokens * scale + 0.5));
}

// Jiffies the kernel accounted as stolen by the hypervisor, and all jiffies (Linux
// /proc/stat); {-1, -1} elsewhere.
std::pair<int64_t, int64_t> cpu_steal_and_total() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  int64_t v[8] = {};
  if (!(in >> cpu) || cpu != "cpu") return {-1, -1};
  int64_t total = 0;
  for (int64_t& x : v) {
    if (!(in >> x)) return {-1, -1};
    total += x;
  }
  return {v[7], total};
}

struct Window {
  Clock::time_point opens, closes;
  bool holds(Clock::time_point t) const { return t >= opens && t <= closes; }
};

// One client: requests back to back. In steady-state mode it keeps sending until the
// window closes and cancels its request in flight then, so every client is busy for the
// whole window (no drain at the end in which a batch runs part-empty); only tokens that
// arrive inside the window count. TTFT and per-token gaps come from burst times.
boost::asio::awaitable<void> client(Engine& engine, const std::vector<std::string>& prompts, int32_t index,
                                    const RunShape& shape, Window window, LevelResult& out, std::mutex& mutex) {
  const size_t first = static_cast<size_t>(index) * 7;
  const bool steady = shape.seconds > 0;
  for (int32_t i = 0; steady ? Clock::now() < window.closes : i < shape.per_client; ++i) {
    GenerateRequest r;
    r.id = "bench-" + std::to_string(index) + "-" + std::to_string(i);
    r.prompt = prompts[(first + static_cast<size_t>(i)) % prompts.size()];
    r.max_tokens = request_length(shape, index, i);
    r.ignore_eos = true;  // lengths independent of the mode: modes compare on the same work
    r.spec.enabled = shape.spec;
    r.spec.adaptive = true;
    r.spec.tree = shape.tree;
    const auto submitted = Clock::now();
    auto last = submitted;
    int64_t tokens = 0;
    bool cancelled = false;
    std::vector<double> gaps;
    std::optional<double> ttft;
    GenerateResult res;
    try {
      res = co_await engine.generate(r, [&](const Burst& b) {
        const auto now = Clock::now();
        if (b.token_ids.empty()) return;
        if (now > window.closes) {  // steady state only: a fixed-count window never closes
          if (!cancelled) engine.cancel(r.id);
          cancelled = true;
          return;
        }
        if (!ttft) {
          ttft = ms_since(submitted, now);
        } else {
          // A burst of n tokens after a gap g: each token waited g / n on average.
          const double per_token = ms_since(last, now) / static_cast<double>(b.token_ids.size());
          gaps.insert(gaps.end(), b.token_ids.size(), per_token);
        }
        last = now;
        if (window.holds(now)) tokens += static_cast<int64_t>(b.token_ids.size());
      });
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex);
      ++out.errors;
      std::cerr << "bench: request failed: " << e.what() << "\n";
      continue;
    }
    std::lock_guard lock(mutex);
    out.tokens += tokens;
    out.drafted += res.spec.drafted;
    out.accepted += res.spec.accepted;
    if (ttft && window.holds(submitted)) out.ttft_ms.push_back(*ttft);
    if (window.holds(submitted)) out.itl_ms.insert(out.itl_ms.end(), gaps.begin(), gaps.end());
  }
}

std::vector<RoundTally> tally_delta(const std::vector<RoundTally>& after, const std::vector<RoundTally>& before) {
  std::vector<RoundTally> out = after;
  for (size_t i = 0; i < before.size() && i < out.size(); ++i) {
    out[i].rounds -= before[i].rounds;
    out[i].seconds -= before[i].seconds;
    out[i].tokens -= before[i].tokens;
  }
  return out;
}

LevelResult run_level(Engine& engine, boost::asio::io_context& io, const std::vector<std::string>& prompts,
                      const RunShape& shape) {
  LevelResult out;
  std::mutex mutex;
  std::vector<std::future<void>> done;
  const auto t0 = Clock::now();
  Window window{t0, Clock::time_point::max()};
  if (shape.seconds > 0) {
    window.opens = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(shape.warmup));
    window.closes =
        window.opens + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(shape.seconds));
  }
  for (int32_t c = 0; c < shape.clients; ++c) {
    done.push_back(
        boost::asio::co_spawn(io, client(engine, prompts, c, shape, window, out, mutex), boost::asio::use_future));
  }
  const bool steady = shape.seconds > 0;
  auto wait_all = [&] {
    for (auto& f : done) f.get();
  };
  auto snapshot = [&] { return boost::asio::co_spawn(io, engine.snapshot(), boost::asio::use_future).get(); };
  if (steady) std::this_thread::sleep_until(window.opens);
  const auto before = cpu_steal_and_total();
  const EngineSnapshot rounds_before = snapshot();
  if (steady) {
    std::this_thread::sleep_until(window.closes);
  } else {
    wait_all();
  }
  const auto after = cpu_steal_and_total();
  const EngineSnapshot rounds_after = snapshot();
  out.plain = tally_delta(rounds_after.plain_rounds, rounds_before.plain_rounds);
  out.drafting = tally_delta(rounds_after.drafting_rounds, rounds_before.drafting_rounds);
  out.seconds = steady ? shape.seconds : std::chrono::duration<double>(Clock::now() - t0).count();
  if (steady) wait_all();
  if (before.first >= 0 && after.second > before.second) {
    out.steal = static_cast<double>(after.first - before.first) / static_cast<double>(after.second - before.second);
  }
  return out;
}

double throughput(const LevelResult& r) { return r.tokens / r.seconds; }

// Whether speculation paid in the rounds that used it, measured free of the drift
// between runs: the speculation-on run's drafting rounds' tokens per second, over what
// plain rounds of the same batch sizes delivered in the time those drafting rounds took.
// The plain rate of a batch size comes from the on-run's own plain rounds (interleaved
// with its drafting rounds) when it has kMinPlainRounds of them, else from the
// neighbouring off-run's. -1: no drafting round to judge.
struct DraftingGain {
  double gain = -1;
  double share = 0;  // of the on-run's decode-round seconds, the drafting rounds'
};

DraftingGain drafting_gain(const LevelResult& on, const LevelResult& off) {
  constexpr int64_t kMinPlainRounds = 10;
  double drafting_tokens = 0, drafting_seconds = 0, plain_equivalent = 0, plain_seconds = 0;
  for (size_t i = 0; i < on.drafting.size(); ++i) {
    const RoundTally& d = on.drafting[i];
    if (d.rounds == 0) continue;
    const RoundTally* p = i < on.plain.size() && on.plain[i].rounds >= kMinPlainRounds ? &on.plain[i]
                          : i < off.plain.size() && off.plain[i].rounds > 0            ? &off.plain[i]
                                                                                       : nullptr;
    if (!p) continue;  // a batch size only the on-run saw
    drafting_tokens += static_cast<double>(d.tokens);
    drafting_seconds += d.seconds;
    plain_equivalent += d.seconds * static_cast<double>(p->tokens) / p->seconds;
  }
  for (const RoundTally& p : on.plain) plain_seconds += p.seconds;
  DraftingGain out;
  if (plain_equivalent > 0) out.gain = drafting_tokens / plain_equivalent;
  if (drafting_seconds + plain_seconds > 0) out.share = drafting_seconds / (drafting_seconds + plain_seconds);
  return out;
}

// 90% percentile-bootstrap interval of the median of paired ratios (fixed seed: the
// same runs give the same interval).
std::pair<double, double> bootstrap_median_ci90(const std::vector<double>& values) {
  if (values.size() < 2) return {values.empty() ? 0 : values[0], values.empty() ? 0 : values[0]};
  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  std::vector<double> medians, sample(values.size());
  for (int b = 0; b < 4000; ++b) {
    for (double& v : sample) v = values[pick(rng)];
    medians.push_back(median(sample));
  }
  return {percentile(medians, 0.05), percentile(medians, 0.95)};
}

// The run with the median throughput (the upper middle one for an even count).
const LevelResult& median_run(const std::vector<LevelResult>& runs) {
  std::vector<const LevelResult*> sorted;
  for (const auto& r : runs) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return throughput(*a) < throughput(*b); });
  return *sorted[sorted.size() / 2];
}

boost::json::object level_json(const LevelResult& r) {
  return {{"tokens_per_second", r.tokens / r.seconds},
          {"tokens", r.tokens},
          {"seconds", r.seconds},
          {"cpu_steal", r.steal},
          {"ttft_ms_p50", percentile(r.ttft_ms, 0.5)},
          {"ttft_ms_p99", percentile(r.ttft_ms, 0.99)},
          {"itl_ms_p50", percentile(r.itl_ms, 0.5)},
          {"itl_ms_p99", percentile(r.itl_ms, 0.99)},
          {"acceptance_rate", r.drafted ? static_cast<double>(r.accepted) / r.drafted : 0.0},
          {"errors", r.errors}};
}

std::vector<double> scaled(const std::vector<double>& values, double factor) {
  std::vector<double> out;
  for (double v : values) out.push_back(v * factor);
  return out;
}

}  // namespace

void add_concurrency_bench_options(CLI::App& cmd, ConcurrencyBenchArgs& args) {
  cmd.add_option("--concurrency", args.levels, "through the actors at these client counts, e.g. 1,2,4,8,16,32");
  cmd.add_option("--seconds", args.seconds, "steady state: each run counts the tokens of this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 3600.0));
  cmd.add_option("--warmup", args.warmup, "steady state: seconds of each run before counting starts")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  cmd.add_option("--length-spread", args.length_spread, "request lengths spread over max-tokens x (1 +- this)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.95));
  cmd.add_option("--max-steal", args.max_steal,
                 "rerun a run that lost more than this share of the CPU to steal (up to 3 tries)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--requests-per-client", args.requests_per_client,
                 "instead of steady state: each client sends this many requests and the run lasts until all finish")
      ->check(CLI::Range(0, 100000));
  cmd.add_option("--trace", args.trace_path, "write a Chrome trace of the speculation-on runs to this file");
  cmd.add_option("--repeat", args.repeat,
                 "--concurrency: interleaved runs of each mode per level (default 3); --spec: runs of the whole "
                 "sequence (default 1); medians are reported")
      ->check(CLI::Range(1, 100));
  cmd.add_flag("!--skip-no-overlap", args.no_overlap_runs,
               "do not run speculation on without lane overlap (a third less time)");
}

void run_concurrency_bench(const PairArgs& pair, const ConcurrencyBenchArgs& args,
                           const std::vector<std::string>& prompts, int32_t max_tokens, bool json) {
  const std::vector<int32_t> levels = parse_id_list(args.levels);
  const int32_t most = *std::max_element(levels.begin(), levels.end());
  EngineConfig config;
  config.target_dir = pair.model.empty() ? default_target_dir() : std::filesystem::path(pair.model);
  config.draft_dir = pair.draft.empty() ? default_models_dir() / "draft" : std::filesystem::path(pair.draft);
  config.target_weights = weight_format_of(pair.weights);
  config.draft_weights = weight_format_of(pair.draft_weights.empty() ? pair.weights : pair.draft_weights);
  config.max_batch = std::max(most, 1);
  config.sequence.max_seq_len = pair.max_seq_len;
  config.trace = !args.trace_path.empty();
  config.threads = pair.threads;
  ThreadPolicy threads;
  RoundCostTable start_costs;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  boost::json::array rows;
  {
    Engine overlapped(io.get_executor(), config);
    threads = overlapped.thread_policy();
    start_costs = overlapped.start_costs();
    EngineConfig serial_config = config;
    serial_config.overlap = false;
    serial_config.trace = false;
    std::optional<Engine> serial;  // loaded and calibrated only when its runs are asked for
    if (args.no_overlap_runs) serial.emplace(io.get_executor(), serial_config);
    for (int32_t clients : levels) {
      RunShape shape;
      shape.clients = clients;
      shape.max_tokens = max_tokens;
      shape.length_spread = args.length_spread;
      std::string error;
      shape.tree = parse_tree_settings(pair.tree, error).value_or(TreeSettings{});
      if (args.requests_per_client > 0) {
        shape.per_client = args.requests_per_client;
      } else {
        shape.seconds = args.seconds;
        shape.warmup = args.warmup;
      }
      // A run the hypervisor took more than --max-steal of the CPU from measures the
      // neighbours, not specd: it is run again (up to 3 times in all) and the least
      // disturbed attempt kept. Each run's steal share is in the JSON.
      auto run = [&](Engine& engine, bool spec) {
        RunShape s = shape;
        s.spec = spec;
        LevelResult kept = run_level(engine, io, prompts, s);
        for (int attempt = 1; attempt < 3 && kept.steal > args.max_steal; ++attempt) {
          LevelResult again = run_level(engine, io, prompts, s);
          if (again.steal < kept.steal) kept = std::move(again);
        }
        return kept;
      };
      // Modes interleaved, so drift in the machine's speed (other tenants, steal time)
      // hits all of them alike; each mode reports its median run.
      std::vector<LevelResult> offs, ons, serials;
      std::vector<double> paired, gains, shares;
      for (int32_t r = 0; r < args.repeat; ++r) {
        // The order alternates, so a mode does not always run on the machine state the
        // other leaves behind (warm caches, a neighbour's burst that is just ending).
        if (r % 2 == 0) {
          offs.push_back(run(overlapped, false));
          ons.push_back(run(overlapped, true));
        } else {
          ons.push_back(run(overlapped, true));
          offs.push_back(run(overlapped, false));
        }
        if (serial) serials.push_back(run(*serial, true));
        paired.push_back(throughput(ons.back()) / throughput(offs.back()));
        const DraftingGain g = drafting_gain(ons.back(), offs.back());
        if (g.gain > 0) gains.push_back(g.gain);
        shares.push_back(g.share);
      }
      auto per_repeat = [](const std::vector<LevelResult>& runs, auto field) {
        boost::json::array out;
        for (const auto& run : runs) out.push_back(field(run));
        return out;
      };
      auto steal = [](const LevelResult& run) { return run.steal; };
      const LevelResult& off = median_run(offs);
      const LevelResult& on = median_run(ons);
      const double ratio = throughput(on) / throughput(off);
      const auto [ci_low, ci_high] = bootstrap_median_ci90(paired);
      boost::json::object row{{"concurrency", clients},
                              {"spec_off", level_json(off)},
                              {"spec_on", level_json(on)},
                              {"spec_on_over_off", ratio},
                              {"spec_on_over_off_per_repeat", boost::json::value_from(paired)},
                              {"spec_on_over_off_paired_median", median(paired)},
                              {"spec_on_over_off_paired_ci90", {ci_low, ci_high}},
                              {"drafting_round_gain_per_repeat", boost::json::value_from(gains)},
                              {"drafting_round_gain", gains.empty() ? -1.0 : median(gains)},
                              {"drafting_round_share_per_repeat", boost::json::value_from(shares)}};
      boost::json::object per_mode{{"spec_off", per_repeat(offs, throughput)},
                                   {"spec_on", per_repeat(ons, throughput)}};
      if (!serials.empty()) {
        row["spec_on_no_overlap"] = level_json(median_run(serials));
        per_mode["spec_on_no_overlap"] = per_repeat(serials, throughput);
      }
      row["tokens_per_second_per_repeat"] = std::move(per_mode);
      row["cpu_steal_per_repeat"] = {{"spec_off", per_repeat(offs, steal)}, {"spec_on", per_repeat(ons, steal)}};
      rows.push_back(std::move(row));
      std::cerr << "bench: concurrency " << clients << " spec on/off throughput " << ratio << " (paired median "
                << median(paired) << ", 90% CI " << ci_low << "-" << ci_high << "), drafting rounds' gain "
                << (gains.empty() ? -1.0 : median(gains)) << "\n";
    }
    if (config.trace) overlapped.write_trace(args.trace_path);
    auto stop = [](Engine& e) -> boost::asio::awaitable<void> { co_await e.stop(std::chrono::seconds(10)); };
    boost::asio::co_spawn(io, stop(overlapped), boost::asio::use_future).get();
    if (serial) boost::asio::co_spawn(io, stop(*serial), boost::asio::use_future).get();
  }
  work.reset();
  io_thread.join();
  // The curves the planner started from: what it priced the first rounds at (the trace
  // shows what it planned against what each round took).
  boost::json::object costs{{"verify_ms", boost::json::value_from(scaled(start_costs.verify_seconds, 1e3))},
                            {"draft_step_ms", boost::json::value_from(scaled(start_costs.draft_step_seconds, 1e3))},
                            {"summary", start_costs.describe()}};
  boost::json::object out{{"max_tokens", max_tokens},
                          {"prompts", prompts.size()},
                          {"threads", threads_json(threads)},
                          {"round_costs_at_start", costs},
                          {"levels", rows}};
  if (json) {
    print_json(out);
    return;
  }
  std::printf("round costs at start: %s\n", start_costs.describe().c_str());
  std::printf("%5s %12s %12s %8s %13s %8s %10s %10s %10s %10s\n", "conc", "off tok/s", "on tok/s", "on/off",
              "paired 90% CI", "gain", "ttft p50", "ttft p99", "itl p50", "itl p99");
  for (const auto& r : rows) {
    const auto& o = r.as_object();
    const auto& on = o.at("spec_on").as_object();
    const auto& ci = o.at("spec_on_over_off_paired_ci90").as_array();
    std::printf("%5lld %12.1f %12.1f %8.2f %6.2f-%-6.2f %8.2f %10.1f %10.1f %10.2f %10.2f\n",
                static_cast<long long>(o.at("concurrency").as_int64()),
                o.at("spec_off").as_object().at("tokens_per_second").as_double(),
                on.at("tokens_per_second").as_double(), o.at("spec_on_over_off").as_double(), ci[0].as_double(),
                ci[1].as_double(), o.at("drafting_round_gain").as_double(), on.at("ttft_ms_p50").as_double(),
                on.at("ttft_ms_p99").as_double(), on.at("itl_ms_p50").as_double(), on.at("itl_ms_p99").as_double());
  }
}

}  // namespace specd::cli
