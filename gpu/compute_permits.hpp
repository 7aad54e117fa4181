#pragma once
// The process's compute-thread budget shared by the lanes: a lane job takes as many
// permits as it runs threads before it starts and returns them when it ends, so the
// lanes together never compute on more threads than the budget (on one CPU the draft
// and target lanes take turns instead of preempting each other mid-pass).
// Thread-safe: every lane thread acquires and releases.
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace specd {

class ComputePermits {
 public:
  explicit ComputePermits(int32_t total);
  int32_t total() const { return total_; }

  // Blocks until min(n, total) permits are free, takes them all at once (a lane never
  // holds some while waiting for more, so two lanes cannot deadlock) and returns how
  // many it took.
  int32_t acquire(int32_t n);
  void release(int32_t n);

 private:
  const int32_t total_;
  int32_t free_;
  std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace specd
