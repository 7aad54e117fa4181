#pragma once
// `specd bench --kernels [--json] [--threads N] [--prefill]`: the linear kernels
// (engine/kernels/) on the committed pair's shapes and on Llama-3.2-sized ones, for
// M = 1, 2, 4, 5, 8, 16 rows: microseconds, t(M)/t(1), GB/s at M = 1 against the read
// bandwidth measured in the same run, and OpenBLAS sgemv/sgemm on an F32 copy beside it.
// The large shapes also run Q8_0 and Q4_0 (quantized from the same floats).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace specd::cli {

struct KernelBenchArgs {
  bool enabled = false;    // --kernels
  bool prefill = false;    // --prefill: also M = 64 and 256 on the large shapes
  int32_t samples = 11;    // the median of this many timed samples is reported
  std::string kinds;       // --kinds: only these dtypes (and openblas_f32); empty: all
  bool attention = false;  // --attention: the attention kernels instead (bench_attention.hpp)
  std::string contexts = "128,1000,4000";
  std::string tiers;  // --tiers: attention tiers to run (default: every one this CPU has)
  int32_t rows = 0;   // --rows: exactly this many attention rows per figure, untimed loop
};

void add_kernel_bench_options(CLI::App& cmd, KernelBenchArgs& args);

// threads <= 0 means 1: a lane's budget is set explicitly, as `specd serve` does.
void run_kernel_bench(const KernelBenchArgs& args, int32_t threads, bool json);

}  // namespace specd::cli
