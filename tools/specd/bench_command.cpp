// `specd bench --spec`: target-only against speculative decoding on the same prompts in
// the same run, at temperature 0 and 1, for K = 1..8 and auto, with both drafters, each
// request through the Engine (the server's actors and rounds), one at a time.
// Prints JSON: measured tokens/s, acceptance a, cost ratio c, speedup (each configuration
// against the target-only runs either side of it), and the speedup predicted from a and
// c by (1 - a^(K+1)) / ((1 - a)(Kc + 1)).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include "actors/engine_runner.hpp"
#include "engine/base/errors.hpp"
#include "engine/model/cost_probe.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/planning/adaptive_k.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "net/data_dir.hpp"
#include "tools/specd/bench_busy_host.hpp"
#include "tools/specd/bench_concurrency.hpp"
#include "tools/specd/bench_kernels.hpp"
#include "tools/specd/bench_model.hpp"
#include "tools/specd/cli_common.hpp"
#include "tools/specd/pair_options.hpp"

namespace specd::cli {

namespace {

struct BenchArgs {
  PairArgs pair;
  bool spec = false, json = false, busy_host = false;
  int32_t generations = 4;        // --busy-host: generations per measurement
  std::string prompt = "ROMEO:";  // --busy-host
  std::string prompts_file;       // empty: conf/bench_prompts.txt of specd's data directory
  int32_t max_tokens = 64;
  int32_t prompt_count = 24;
  int32_t k_max = SequenceLimits{}.k_max;
  int32_t spec_repeat = 1;           // --spec: runs of the whole interleaved sequence (--repeat)
  ModelBenchArgs model_bench;        // without --spec: the real-size single-model benchmark
  ConcurrencyBenchArgs concurrency;  // --concurrency: serving figures through the actors
  KernelBenchArgs kernels;           // --kernels: the linear kernels alone, no model
};

struct Measured {
  double seconds = 0;
  int64_t tokens = 0;
  SpecStats stats;
  double tokens_per_second() const { return seconds > 0 ? tokens / seconds : 0; }
  void add(const Measured& other) {
    seconds += other.seconds;
    tokens += other.tokens;
    stats.add(other.stats);
  }
};

// One configuration's runs, each with the target-only runs on either side of it pooled.
struct ConfigRuns {
  DrafterKind drafter = DrafterKind::model;
  std::string k;
  std::string tree = "off";
  double temperature = 0;
  SpecSettings spec;
  std::vector<double> speedups;  // per repeat: the run over its bracketing target-only runs
  Measured pooled, pooled_base;  // over the repeats
};

std::vector<std::string> read_prompts(const BenchArgs& a) {
  const std::string file =
      a.prompts_file.empty() ? (net::data_dir() / "conf" / "bench_prompts.txt").string() : a.prompts_file;
  std::ifstream in(file);
  if (!in) throw SpecdError(ErrorCode::missing_file, "cannot read prompts file " + file);
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line) && static_cast<int32_t>(prompts.size()) < a.prompt_count;) {
    std::string text;  // lines hold "\n" escapes for newlines
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
        text += '\n';
        ++i;
      } else {
        text += line[i];
      }
    }
    if (!text.empty()) prompts.push_back(text);
  }
  if (prompts.empty()) throw SpecdError(ErrorCode::bad_value, file + " holds no prompts");
  return prompts;
}

// Runs every prompt alone (single-request latency, the figure speculation improves).
Measured run_all(EngineRunner& runner, const std::vector<std::string>& prompts, const SpecSettings& spec,
                 double temperature, int32_t max_tokens) {
  Measured m;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r;
    r.prompt = prompts[i];
    r.max_tokens = max_tokens;
    r.sampling.temperature = temperature;
    r.sampling.seed = 1000 + i;
    r.spec = spec;
    const auto t0 = std::chrono::steady_clock::now();
    const GenerateResult res = runner.generate(std::move(r));
    Measured one;
    one.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    one.tokens = static_cast<int64_t>(res.token_ids.size());
    one.stats = res.spec;
    m.add(one);
  }
  return m;
}

// The cost ratio c of the prediction: one-token decode steps of each model alone, on
// this thread with the whole thread budget (what one request's passes get with lending).
struct StepCosts {
  double target = 0, draft = 0;
  int64_t target_parameters = 0, draft_parameters = 0;
};
StepCosts measure_step_costs(const EngineConfig& config, int threads) {
  apply_cli_thread_policy(threads);
  StepCosts out;
  {
    auto target = load_model(config.target_dir, config.target_weights);
    out.target = measure_decode_step_seconds(*target, 128);
    out.target_parameters = target->parameter_count();
  }
  auto draft = load_model(config.draft_dir, config.draft_weights);
  out.draft = measure_decode_step_seconds(*draft, 128);
  out.draft_parameters = draft->parameter_count();
  return out;
}

boost::json::object row_json(const ConfigRuns& r, double c) {
  const Measured& m = r.pooled;
  const double a = m.stats.alpha();
  const double mean_k = m.stats.rounds ? static_cast<double>(m.stats.drafted) / m.stats.rounds : 0;
  const double speedup = median(r.speedups);
  const int32_t k_for_formula = static_cast<int32_t>(std::lround(mean_k));
  const double predicted = k_for_formula > 0 ? expected_speedup(std::min(a, 1.0), k_for_formula, c) : 1.0;
  return {{"drafter", drafter_name(r.drafter)},
          {"k", r.k},
          {"tree", r.tree},
          {"temperature", r.temperature},
          {"tokens_per_second", m.tokens_per_second()},
          {"target_only_tokens_per_second", r.pooled_base.tokens_per_second()},
          {"speedup", speedup},
          {"speedup_per_repeat", boost::json::value_from(r.speedups)},
          {"alpha", a},
          {"acceptance_rate", m.stats.acceptance_rate()},
          {"mean_k", mean_k},
          {"tokens_per_round", m.stats.tokens_per_round()},
          {"c", c},
          {"predicted_speedup", predicted},
          {"measured_over_predicted", speedup / predicted}};
}

void run_bench(const BenchArgs& a) {
  if (a.kernels.enabled) return run_kernel_bench(a.kernels, a.pair.threads, a.json);
  if (!a.concurrency.levels.empty()) {
    return run_concurrency_bench(a.pair, a.concurrency, read_prompts(a), a.max_tokens, a.json);
  }
  if (a.busy_host) {
    return run_busy_host_bench(a.pair, {a.prompt, a.max_tokens, a.generations, a.spec_repeat}, a.json);
  }
  if (!a.spec && !a.pair.model.empty()) return run_model_bench(a.pair, a.model_bench, a.json);
  if (!a.spec) throw CLI::ValidationError("--spec", "pass --spec, or --model DIR for the model benchmark");
  PairArgs pair_args = a.pair;
  pair_args.k = "auto";
  PairChoice pair = choose_pair(pair_args);
  if (pair.engine.draft_dir.empty())
    throw SpecdError(ErrorCode::invalid_argument, "bench --spec needs a draft model (--draft)");
  const StepCosts steps = measure_step_costs(pair.engine, a.pair.threads);
  const double c = steps.draft / steps.target;
  pair.engine.sequence.k_max = a.k_max;
  pair.engine.calibration_seconds = 2.0;  // auto rows plan K from the measured costs, as in serve
  EngineRunner runner(pair.engine);
  const std::vector<std::string> prompts = read_prompts(a);
  std::vector<ConfigRuns> configs;
  for (double temperature : {0.0, 1.0}) {
    for (DrafterKind drafter : {DrafterKind::model, DrafterKind::lookup}) {
      for (int32_t k = 1; k <= a.k_max + 1; ++k) {
        ConfigRuns r;
        r.drafter = drafter;
        r.temperature = temperature;
        r.spec.drafter = drafter;
        r.spec.adaptive = k > a.k_max;
        r.spec.k = r.spec.adaptive ? 1 : k;
        r.spec.k_max = a.k_max;
        r.k = r.spec.adaptive ? "auto" : std::to_string(k);
        configs.push_back(std::move(r));
      }
      if (pair.spec.tree.mode != TreeMode::off) {  // --tree: beside the chains, in the same interleaved run
        ConfigRuns r;
        r.drafter = drafter;
        r.temperature = temperature;
        r.spec.drafter = drafter;
        r.spec.adaptive = true;
        r.spec.k = 1;
        r.spec.k_max = a.k_max;
        r.spec.tree = pair.spec.tree;
        r.k = "auto";
        r.tree = tree_settings_name(pair.spec.tree);
        configs.push_back(std::move(r));
      }
    }
  }
  // Every configuration runs between two target-only runs and is compared with their
  // pooled rate: this host's speed drifts by up to 20% over minutes, and drift that is
  // linear over the three runs cancels. --repeat runs the whole sequence again.
  SpecSettings off;
  off.enabled = false;
  for (int32_t repeat = 0; repeat < a.spec_repeat; ++repeat) {
    std::optional<Measured> before;
    double before_temperature = -1;
    for (ConfigRuns& r : configs) {
      if (r.temperature != before_temperature) before = run_all(runner, prompts, off, r.temperature, a.max_tokens);
      before_temperature = r.temperature;
      const Measured m = run_all(runner, prompts, r.spec, r.temperature, a.max_tokens);
      const Measured after = run_all(runner, prompts, off, r.temperature, a.max_tokens);
      Measured base = *before;
      base.add(after);
      r.speedups.push_back(m.tokens_per_second() / base.tokens_per_second());
      r.pooled.add(m);
      r.pooled_base.add(base);
      before = after;
      std::cerr << "bench: T=" << r.temperature << " " << drafter_name(r.drafter) << " k=" << r.k << " tree=" << r.tree
                << " speedup " << r.speedups.back() << "\n";
    }
  }
  boost::json::array rows;
  for (const ConfigRuns& r : configs) {
    const double drafter_c = r.drafter == DrafterKind::model ? c : 0.0;  // lookup proposals cost microseconds
    rows.push_back(row_json(r, drafter_c));
  }
  boost::json::object out{{"prompts", prompts.size()},
                          {"max_tokens", a.max_tokens},
                          {"threads", threads_json(runner.engine().thread_policy())},
                          {"target_parameters", steps.target_parameters},
                          {"draft_parameters", steps.draft_parameters},
                          {"target_step_ms", steps.target * 1e3},
                          {"draft_step_ms", steps.draft * 1e3},
                          {"c", c},
                          {"results", rows}};
  if (a.json) {
    print_json(out);
    return;
  }
  std::printf("%-6s %-7s %-5s %10s %8s %8s %10s\n", "temp", "drafter", "k", "tokens/s", "speedup", "alpha",
              "predicted");
  for (const auto& r : rows) {
    const auto& o = r.as_object();
    std::printf("%-6.1f %-7s %-5s %10.1f %8.2f %8.3f %10.2f\n", o.at("temperature").as_double(),
                o.at("drafter").as_string().c_str(), o.at("k").as_string().c_str(),
                o.at("tokens_per_second").as_double(), o.at("speedup").as_double(), o.at("alpha").as_double(),
                o.at("predicted_speedup").as_double());
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Benchmarks: --spec compares speculative with target-only decoding");
  add_pair_options(*cmd, args->pair);
  cmd->add_flag("--spec", args->spec, "speculative against target-only, K 1..k-max and auto, both drafters");
  cmd->add_flag("--busy-host", args->busy_host,
                "the default greedy generation quiet and beside 1 and 2 CPU-bound processes (`yes`)");
  cmd->add_option("--generations", args->generations, "--busy-host: generations per measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--prompt", args->prompt, "--busy-host: the prompt")->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--prompts", args->prompts_file,
                  "one prompt per line (\\n for newlines; default: conf/bench_prompts.txt of specd's data directory)");
  cmd->add_option("--prompt-count", args->prompt_count, "prompts to use")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-tokens", args->max_tokens, "tokens per prompt")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--k-max", args->k_max, "largest fixed K, and the bound of auto")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  add_model_bench_options(*cmd, args->model_bench);
  add_concurrency_bench_options(*cmd, args->concurrency);
  add_kernel_bench_options(*cmd, args->kernels);
  // --repeat is shared: 3 by default for --concurrency, 1 for --spec (a run takes 8 min).
  CLI::Option* repeat = cmd->get_option("--repeat");
  cmd->callback([args, repeat] {
    args->spec_repeat = repeat->count() > 0 ? args->concurrency.repeat : args->busy_host ? 3 : 1;
    run_bench(*args);
  });
}

}  // namespace specd::cli
