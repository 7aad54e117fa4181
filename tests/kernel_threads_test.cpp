// KernelThreads (engine/kernels/kernel_threads): every item runs once whatever the
// split, a caller whose workers keep stalling it works alone for a while, and the rule
// that decides it: a slower worker that still does its share keeps the split.
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

TEST_CASE("a window's split pays when its items went faster than the caller alone would") {
  using std::chrono::microseconds;
  // A preempted worker: the caller ran 56 of 64 items in 1.4 ms and waited 3.6 ms more.
  CHECK_FALSE(KernelThreads::split_pays(64, 56, microseconds(5000), microseconds(1400)));
  // Workers that start late but do half the items (a Q4_K_M decode on a noisy host): the
  // caller waited 20% of the window, and the split still ran 1.6x its own pace.
  CHECK(KernelThreads::split_pays(100, 50, microseconds(20000), microseconds(16000)));
  // A worker at 1.5x the caller's time a chunk, one chunk each: the caller waits a third
  // of every call (over the old rule's 25%), yet the split runs 1.33x its pace.
  CHECK(KernelThreads::split_pays(2, 1, microseconds(1500), microseconds(1000)));
  // The caller did everything: the split ran at its pace less the wait.
  CHECK_FALSE(KernelThreads::split_pays(64, 64, microseconds(2010), microseconds(2000)));
  // The worker did everything.
  CHECK(KernelThreads::split_pays(64, 0, microseconds(2000), microseconds(0)));
}
