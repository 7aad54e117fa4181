#pragma once
// `specd bench --concurrency 1,2,4,8,16,32 --json`: the serving figures through the
// actor runtime. At each concurrency, that many clients each send requests back to
// back for a fixed window (steady state: every client busy for all of it); measured per
// mode in the same run: speculation off, speculation on (adaptive K), and speculation on
// without lane overlap. Reports aggregate tokens/s, time to
// first token and inter-token latency p50/p99. `specd generate` and `bench --spec` run
// the same Engine, so concurrency 1 is their single-request figure.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tools/specd/pair_options.hpp"

namespace specd::cli {

struct ConcurrencyBenchArgs {
  std::string levels;               // "1,2,4"; empty: not requested
  double seconds = 8;               // steady state: the measured window of each run
  double warmup = 1;                // steady state: seconds before the window opens
  double length_spread = 0.5;       // request lengths: max_tokens x (1 +- spread)
  double max_steal = 0.05;          // runs losing more CPU to the hypervisor are rerun
  int32_t requests_per_client = 0;  // > 0: fixed count per client instead of steady state
  std::string trace_path;           // Chrome trace of the speculation-on runs
  int32_t repeat = 3;               // interleaved runs per mode and level; the median is reported
  bool no_overlap_runs = true;      // also run speculation on without lane overlap
};

void add_concurrency_bench_options(CLI::App& cmd, ConcurrencyBenchArgs& args);

void run_concurrency_bench(const PairArgs& pair, const ConcurrencyBenchArgs& args,
                           const std::vector<std::string>& prompts, int32_t max_tokens, bool json);

}  // namespace specd::cli
