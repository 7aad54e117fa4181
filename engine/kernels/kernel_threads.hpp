#pragma once
// The threads of one compute lane for the linear kernels: n - 1 workers plus the caller.
// parallel_for splits a range of output-column blocks into contiguous chunks that the
// threads claim as they arrive, so a row's arithmetic never depends on the thread count
// or on which thread ran which chunk. Idle workers sleep on a futex
// (std::atomic::wait) after a short bounded spin, so a shared host loses no CPU to them.
// One caller at a time: parallel_for is called from the owning lane's thread only.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace specd::kernels {

// Threads another lane is not using at this moment (the process's compute budget,
// compute/ComputePermits). borrow() never waits and lends nothing while a lane is waiting
// for its own share, so a lender's owner gets its threads back within one call.
class ThreadLender {
 public:
  virtual ~ThreadLender() = default;
  virtual int32_t borrow(int32_t n) = 0;  // takes up to n free threads; returns how many
  virtual void give_back(int32_t n) = 0;
};

class KernelThreads {
 public:
  // `threads` >= 1 (1: no workers). A call runs on `reserved` of them (0: all), plus
  // those it borrows from `lender` for the length of that one call: on 2 CPUs the target
  // lane computes on both while the draft lane is idle and drops to its own one as soon
  // as the draft lane takes its share back (a newcomer's prefill still overlaps a pass).
  // The workers are named `name` (at most 15 characters show in ps, top and perf).
  explicit KernelThreads(int32_t threads, int32_t reserved = 0, ThreadLender* lender = nullptr,
                         const std::string& name = "kernel worker");
  ~KernelThreads();
  KernelThreads(const KernelThreads&) = delete;
  KernelThreads& operator=(const KernelThreads&) = delete;

  int32_t size() const { return static_cast<int32_t>(workers_.size()) + 1; }
  int32_t reserved() const { return reserved_; }

  // Calls fn(begin, end) over [0, n) split into up to kChunksPerThread * size() contiguous
  // chunks of at least `grain` items (small ranges run on the caller alone); the caller
  // takes chunks too. When, over a window of calls, the split did its items no faster
  // than the caller would have alone (at its own measured pace: workers the host
  // preempted leave it to do most chunks and then wait), it runs calls alone for a
  // while, then tries its workers again.
  // Returns when all parts are done. Exceptions from fn terminate (kernels do not throw).
  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

  // The rule a stall window is judged by: true when its items went faster split than
  // the caller's own pace (own_items over its working time) would have done them alone
  // (in the window's total time), by kSplitGain.
  static bool split_pays(int64_t items, int64_t own_items, std::chrono::nanoseconds total,
                         std::chrono::nanoseconds worked);

  // The pool the kernels use when none is passed; nullptr (the default) runs them on the
  // calling thread. Thread-local: each lane's thread sets its own.
  static KernelThreads* current();
  static void set_current(KernelThreads* threads);

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int32_t kChunksPerThread = 4;
  // Stall accounting is by time, not by call: one preempted worker costs a time slice
  // (milliseconds) against calls of tens of microseconds, so a per-call average hides it.
  static constexpr Clock::duration kStallWindow = std::chrono::milliseconds(20);
  // The split must do a window's items this much faster than the caller's own pace
  // would, or the caller goes alone. Pace, not the caller's share of time waiting: late
  // workers that still do half the items keep the split, and a higher gain sent the
  // committed pair's speculative decoding serial at a cost (BENCHMARKS.md, "AVX2 Q4_K_M
  // decode: serial spells").
  static constexpr double kSplitGain = 1.0;
  static constexpr Clock::duration kSerialTime = std::chrono::milliseconds(200);
  void worker_loop(int32_t index);
  int64_t run_chunks(uint32_t job);  // returns the items this thread ran
  void note_stall(Clock::time_point now, Clock::duration waited, Clock::duration worked, int64_t items,
                  int64_t own_items);

  int32_t reserved_;
  ThreadLender* lender_;
  std::vector<std::thread> workers_;
  // Per worker: the number of the job it is to join. A call wakes only the workers it
  // has threads for, so a worker without a permit never spins on a lent CPU.
  std::unique_ptr<std::atomic<uint32_t>[]> wake_;
  // The current job, written by the caller before it publishes the job's claim; atomic
  // because a worker that woke late may read them while the next job is being set up.
  std::atomic<const RangeFn*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, chunks_{0};
  uint32_t generation_ = 0;         // the current job's number (caller only)
  std::atomic<uint64_t> claim_{0};  // job number << 32 | next chunk to take
  std::atomic<int64_t> done_{0};    // chunks of the current job finished
  std::atomic<bool> stop_{false};
  // Caller only: the current window's time working and in all, its items and the
  // caller's own share of them, and the end of a serial spell.
  Clock::duration window_worked_{}, window_total_{};
  int64_t window_items_ = 0, window_own_items_ = 0;
  Clock::time_point serial_until_{};
};

}  // namespace specd::kernels
