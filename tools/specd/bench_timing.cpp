#include "tools/specd/bench_timing.hpp"

#include <time.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

}  // namespace

Timing time_calls(int copies, int samples, const std::function<void(int)>& fn) {
  using Clock = std::chrono::steady_clock;
  for (int c = 0; c < copies; ++c) fn(c);  // warm-up: page faults, pools
  std::vector<double> wall, cpu;
  int next = 0;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    int64_t calls = 0;
    double elapsed = 0;
    do {
      fn(next);
      next = (next + 1) % copies;
      ++calls;
    } while ((elapsed = std::chrono::duration<double>(Clock::now() - t0).count()) < 2e-3);
    wall.push_back(elapsed / calls * 1e6);
    cpu.push_back((thread_cpu_seconds() - c0) / calls * 1e6);
  }
  return {median(wall), median(cpu)};
}

}  // namespace specd::cli
