#pragma once
// `specd bench --busy-host [--json]`: what a shared host does to decoding. The default
// greedy generation of `specd generate` (target-only and speculative, on the thread
// policy a user gets) runs quiet and then beside N CPU-bound processes (`yes` writing to
// /dev/null, as a neighbour's busy job), N = 1 and 2, interleaved per repeat so that the
// host's drift cancels. Prints tokens/s per mode and N, the busy/quiet ratio, and the
// share of a CPU the process got (its CPU time over wall time).
#include <cstdint>
#include <string>

#include "tools/specd/pair_options.hpp"

namespace specd::cli {

struct BusyHostArgs {
  std::string prompt = "ROMEO:";
  int32_t max_tokens = 64;
  int32_t generations = 4;  // per measurement: generations of max_tokens each, summed
  int32_t repeat = 3;       // interleaved rounds of quiet, N = 1, N = 2; medians are reported
};

void run_busy_host_bench(const PairArgs& pair, const BusyHostArgs& args, bool json);

}  // namespace specd::cli
