#pragma once
// `specd bench --model DIR [--draft DIR] [--batch B] --json`: what one model costs on
// this machine at real size: load time, prefill tokens/s, decode ms/token alone and in
// a batch, peak RSS, and decode time against the memory-bandwidth bound.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <vector>

#include "tools/specd/pair_options.hpp"

namespace specd::cli {

struct ModelBenchArgs {
  int32_t batch = 4;
  int64_t prompt_len = 128;
  int32_t steps = 16;  // timed decode steps per run
  int32_t runs = 3;    // the median of this many runs is reported
  // Verify passes of one sequence with this many rows, timed like a decode step and
  // reported against it ("verify_steps"): what a speculative round's target pass costs.
  std::vector<int64_t> verify_rows{5, 8};
};

void add_model_bench_options(CLI::App& cmd, ModelBenchArgs& args);

// Uses pair.model, pair.draft, their weights and pair.threads; prints one JSON object or a summary.
// The target is measured and freed before the draft loads, so a pair needs only the
// larger model's memory; c is draft over target single-sequence decode ms/token.
void run_model_bench(const PairArgs& pair, const ModelBenchArgs& args, bool json);

}  // namespace specd::cli
