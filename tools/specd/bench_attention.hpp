#pragma once
// `specd bench --kernels --attention [--contexts 128,1000,4000] [--tiers ...] [--rows N]
// [--json]`: one decode row's attention in one layer at Llama-3.2-3B shapes (24 query
// heads, 8 KV heads of 128; BF16 blocks of 16 positions) over each context, on one
// thread, for each attention tier this CPU has and for the baseline `scalar_f32` (the
// F32 contiguous-cache attention specd ran before the paged cache): microseconds per row
// and the KV bytes it read per second. The layers cycled through hold 4x the L3, so keys
// and values stream from memory as in a real step. --rows N runs exactly N rows per
// figure (after one warm-up row) over one layer, for instruction counts; valgrind cannot
// load specd (libtorch's dependencies), so count with its torch-free twin:
//   valgrind --tool=callgrind --toggle-collect='*attention_row*' \
//     build/specd_attention_bench --contexts 1000 --tiers avx2 --rows 10
// counts N + 1 rows.
#include <CLI/CLI.hpp>

#include "tools/specd/bench_kernels.hpp"

namespace specd::cli {

void add_attention_bench_options(CLI::App& cmd, KernelBenchArgs& args);
void run_attention_bench(const KernelBenchArgs& args, bool json);

}  // namespace specd::cli
