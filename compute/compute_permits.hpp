#pragma once
// The process's compute-thread budget shared by the lanes: a lane job takes as many
// permits as it runs threads before it starts and returns them when it ends, so the
// lanes together never compute on more threads than the budget (on one CPU the draft
// and target lanes take turns instead of preempting each other mid-pass).
// Between a lane's jobs, and while a job holds fewer than its lane has threads, the
// free permits are lent call by call to the other lane's kernels (kernels::ThreadLender).
// Thread-safe: every lane thread acquires, releases, borrows and gives back.
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "engine/kernels/kernel_threads.hpp"

namespace specd {

class ComputePermits : public kernels::ThreadLender {
 public:
  explicit ComputePermits(int32_t total);
  int32_t total() const { return total_; }

  // Blocks until min(n, total) permits are free, takes them all at once (a lane never
  // holds some while waiting for more, so two lanes cannot deadlock) and returns how
  // many it took.
  int32_t acquire(int32_t n);
  void release(int32_t n);

  // Up to n of the free permits, without waiting; none while a lane waits in acquire()
  // (a lane re-borrowing between its calls would otherwise starve it).
  int32_t borrow(int32_t n) override;
  void give_back(int32_t n) override { release(n); }
  int32_t waiting();  // lanes blocked in acquire()

 private:
  const int32_t total_;
  int32_t free_;
  int32_t waiting_ = 0;
  std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace specd
