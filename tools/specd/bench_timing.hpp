#pragma once
// How the kernel benchmarks time a call (bench_kernels, bench_attention).
#include <functional>

namespace specd::cli {

// Microseconds per call of fn(copy), the median over `samples`; each sample repeats
// calls, cycling over the copies, for at least 2 ms, so short calls are not lost in the
// clock's resolution. cpu_us is the calling thread's CPU time: on a shared host it leaves
// out the time the thread waited for a core, so at one thread it is the figure to compare
// when other processes run (the wall time is the one that counts on a quiet machine).
struct Timing {
  double us = 0, cpu_us = 0;
};
Timing time_calls(int copies, int samples, const std::function<void(int)>& fn);

}  // namespace specd::cli
