#pragma once
// The threads of one compute lane for the linear kernels: n - 1 workers plus the caller.
// parallel_for splits a range of output-column blocks into contiguous chunks that the
// threads claim as they arrive, so a row's arithmetic never depends on the thread count
// or on which thread ran which chunk. Idle workers sleep on a futex
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

  // Calls fn(begin, end) over [0, n) split into up to kChunksPerThread * size() contiguous
  // chunks of at least `grain` items (small ranges run on the caller alone); the caller
  // takes chunks too. After calls that mostly waited for a preempted worker (a busy
  // host), the caller runs the next kSerialCalls alone.
  // Returns when all parts are done. Exceptions from fn terminate (kernels do not throw).
  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

  // The pool the kernels use when none is passed; nullptr (the default) runs them on the
  // calling thread. Thread-local: each lane's thread sets its own.
  static KernelThreads* current();
  static void set_current(KernelThreads* threads);

 private:
  static constexpr int32_t kChunksPerThread = 4;
  static constexpr double kStallShare = 0.3;     // of a call's time spent waiting for workers
  static constexpr int32_t kSerialCalls = 2048;  // calls run alone after a stall (a few ms)
  void worker_loop();
  void run_chunks(uint32_t job);
  void note_stall(double waited, double worked);

  std::vector<std::thread> workers_;
  // The current job, written by the caller before it publishes the job's claim; atomic
  // because a worker that woke late may read them while the next job is being set up.
  std::atomic<const RangeFn*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, chunks_{0};
  std::atomic<uint32_t> generation_{0};  // the current job's number; workers wait on it
  std::atomic<uint64_t> claim_{0};       // job number << 32 | next chunk to take
  std::atomic<int64_t> done_{0};         // chunks of the current job finished
  std::atomic<bool> stop_{false};
  double stall_share_ = 0;         // moving average of the waiting share (caller only)
  int32_t serial_calls_left_ = 0;  // > 0: a recent stall, the caller runs calls alone
};

}  // namespace specd::kernels
