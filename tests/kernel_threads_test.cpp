// KernelThreads (engine/kernels/kernel_threads): every item runs once whatever the
// split, a caller whose workers keep stalling it works alone for a while, and a slower
// worker that still does its share keeps the split.
#include "engine/kernels/kernel_threads.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using specd::kernels::KernelThreads;

TEST_CASE("parallel_for covers the range exactly once, split or not") {
  KernelThreads threads(3);
  for (const int64_t n : {1, 2, 7, 64, 1000}) {
    for (const int64_t grain : {1, 4, 100}) {
      std::vector<std::atomic<int32_t>> hits(static_cast<size_t>(n));
      threads.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (const auto& h : hits) CHECK(h.load() == 1);
    }
  }
}

TEST_CASE("a caller held up by a stalled worker runs the next calls alone") {
  KernelThreads threads(2);
  const auto caller = std::this_thread::get_id();
  std::mutex mutex;
  std::set<std::thread::id> ran_on;
  // A chunk that lands on the worker takes 5 ms, as a worker the host preempted does;
  // the caller's own take 0.2 ms, so it spends most of each call waiting.
  auto call = [&] {
    ran_on.clear();
    threads.parallel_for(64, 1, [&](int64_t, int64_t) {
      const auto self = std::this_thread::get_id();
      std::this_thread::sleep_for(std::chrono::microseconds(self == caller ? 200 : 5000));
      std::lock_guard lock(mutex);
      ran_on.insert(self);
    });
  };
  // Calls for longer than the stall window (20 ms): the worker takes part and stalls.
  bool worker_ran = false;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(30)) {
    call();
    worker_ran |= ran_on.size() > 1;
  }
  REQUIRE(worker_ran);
  // Then the serial spell (200 ms, these calls take about 35): only the caller runs.
  for (int32_t i = 0; i < 20; ++i) {
    call();
    CHECK(ran_on == std::set{caller});
  }
}

TEST_CASE("a worker slower than the caller that still does its share keeps the split") {
  KernelThreads threads(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int32_t> on_worker{0};
  // Two chunks a call: the caller's takes 1 ms, the worker's 1.5 ms. The caller waits a
  // third of every call (a share that once sent it serial), yet the two finish a call's
  // items 1.33x as fast as the caller would alone, so the split stays.
  auto call = [&] {
    threads.parallel_for(2, 1, [&](int64_t, int64_t) {
      const bool mine = std::this_thread::get_id() == caller;
      std::this_thread::sleep_for(std::chrono::microseconds(mine ? 1000 : 1500));
      if (!mine) on_worker.fetch_add(1);
    });
  };
  for (int32_t i = 0; i < 60; ++i) call();  // about 90 ms: four stall windows
  CHECK(on_worker.load() >= 50);
}
