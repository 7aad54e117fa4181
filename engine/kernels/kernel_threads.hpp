#pragma once
// The threads of one compute lane for the linear kernels: n - 1 workers plus the caller.
// parallel_for splits a range of output-column blocks into n contiguous parts, so a
// row's arithmetic never depends on the thread count. Idle workers sleep on a futex
// (std::atomic::wait) after a short bounded spin, so a shared host loses no CPU to them.
// One caller at a time: parallel_for is called from the owning lane's thread only.
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace specd::kernels {

class KernelThreads {
 public:
  explicit KernelThreads(int32_t threads);  // threads >= 1 (1: no workers)
  ~KernelThreads();
  KernelThreads(const KernelThreads&) = delete;
  KernelThreads& operator=(const KernelThreads&) = delete;

  int32_t size() const { return static_cast<int32_t>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n) split into size() contiguous parts, part 0 on the
  // caller; parts smaller than `grain` are merged, so small ranges use fewer threads.
  // Returns when all parts are done. Exceptions from fn terminate (kernels do not throw).
  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

  // The pool the kernels use when none is passed; nullptr (the default) runs them on the
  // calling thread. Thread-local: each lane's thread sets its own.
  static KernelThreads* current();
  static void set_current(KernelThreads* threads);

 private:
  void worker_loop(int32_t index);
  void run_part(int32_t part);

  std::vector<std::thread> workers_;
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int32_t parts_ = 1;
  std::atomic<uint32_t> generation_{0};  // bumped once per job; workers wait on it
  std::atomic<int32_t> pending_{0};      // workers still running the current job
  std::atomic<bool> stop_{false};
};

}  // namespace specd::kernels
