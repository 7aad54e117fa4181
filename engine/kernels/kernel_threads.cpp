#include "engine/kernels/kernel_threads.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specd::kernels {

namespace {

thread_local KernelThreads* t_current = nullptr;

// How long a worker (or the caller waiting for workers) polls before it sleeps on the
// futex. A decode step issues one parallel_for per linear layer, tens of microseconds
// apart (a 3B model's attention sits between its qkv and o layers); waking a sleeping
// worker costs tens of microseconds in a VM, so the spin outlasts those gaps (a shorter
// one left the caller waiting for late workers: BENCHMARKS.md, "AVX2 Q4_K_M decode:
// serial spells"), while the bound keeps an idle pool off the CPU (a pool that spins
// without bound slowed neighbours 10-30x on this 2-vCPU host).
constexpr auto kSpin = std::chrono::microseconds(200);

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Waits until `value` differs from `old`: polls for kSpin, then sleeps on the futex.
template <class T>
T wait_change(const std::atomic<T>& value, T old) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
    cpu_relax();
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

KernelThreads* KernelThreads::current() { return t_current; }
void KernelThreads::set_current(KernelThreads* threads) { t_current = threads; }

KernelThreads::KernelThreads(int32_t threads, int32_t reserved, ThreadLender* lender, const std::string& name)
    : reserved_(std::clamp(reserved > 0 ? reserved : threads, 1, std::max(1, threads))),
      lender_(lender),
      wake_(std::make_unique<std::atomic<uint32_t>[]>(std::max(1, threads))) {
  for (int32_t i = 0; i + 1 < threads; ++i) {
    workers_.emplace_back([this, i, name = name.substr(0, 15)] {
      pthread_setname_np(pthread_self(), name.c_str());
      worker_loop(i);
    });
  }
}

KernelThreads::~KernelThreads() {
  stop_.store(true, std::memory_order_release);
  for (size_t i = 0; i < workers_.size(); ++i) {
    wake_[i].fetch_add(1, std::memory_order_acq_rel);
    wake_[i].notify_one();
  }
  for (auto& t : workers_) t.join();
}

int64_t KernelThreads::run_chunks(uint32_t job) {
  int64_t items = 0;
  for (;;) {
    uint64_t claim = claim_.load();
    if (static_cast<uint32_t>(claim >> 32) != job) return items;  // that job is over
    const int64_t chunk = static_cast<int64_t>(claim & 0xffffffffu);
    const int64_t chunks = chunks_.load(), n = n_.load();
    const RangeFn* fn = fn_.load();
    if (chunk >= chunks) return items;
    // The claim carries the job's number, so a worker that woke late cannot take a
    // chunk of a newer job with the older job's bounds.
    if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;
    const int64_t begin = n * chunk / chunks, end = n * (chunk + 1) / chunks;
    if (begin < end) (*fn)(begin, end);
    items += end - begin;
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done_.notify_one();
  }
}

void KernelThreads::worker_loop(int32_t index) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_change(wake_[index], seen);
    if (stop_.load(std::memory_order_acquire)) return;
    run_chunks(seen);
  }
}

void KernelThreads::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  const int64_t by_grain = grain > 0 ? (n + grain - 1) / grain : n;
  if (size() == 1 || by_grain <= 1) return fn(0, n);
  const auto start = Clock::now();
  if (start < serial_until_) return fn(0, n);
  const int32_t borrowed = lender_ && size() > reserved_ ? lender_->borrow(size() - reserved_) : 0;
  struct GiveBack {
    ThreadLender* lender;
    int32_t n;
    ~GiveBack() {
      if (n > 0) lender->give_back(n);
    }
  } give_back{lender_, borrowed};
  const int32_t threads = reserved_ + borrowed;
  // A few chunks per thread, claimed as threads arrive: a worker the host descheduled
  // (a busy neighbour) leaves its share to the others instead of stalling the caller.
  const int64_t chunks = std::min<int64_t>(by_grain, int64_t{kChunksPerThread} * threads);
  if (threads == 1 || chunks <= 1) return fn(0, n);
  if (++generation_ == 0) ++generation_;  // 0 is "no job" in claim_
  const uint32_t job = generation_;
  fn_ = &fn;
  n_ = n;
  chunks_ = chunks;
  done_ = 0;
  claim_ = static_cast<uint64_t>(job) << 32;
  for (int32_t i = 0; i + 1 < threads; ++i) {
    wake_[i].store(job, std::memory_order_release);
    wake_[i].notify_one();
  }
  const int64_t own_items = run_chunks(job);
  const auto own_done = Clock::now();
  for (int64_t d = done_.load(std::memory_order_acquire); d != chunks;) d = wait_change(done_, d);
  claim_ = 0;  // a worker that wakes late finds no job to claim
  const auto end = Clock::now();
  note_stall(end, end - own_done, own_done - start, n, own_items);
}

bool KernelThreads::split_pays(int64_t items, int64_t own_items, std::chrono::nanoseconds total,
                               std::chrono::nanoseconds worked) {
  const double split_pace = static_cast<double>(items) / static_cast<double>(total.count() + 1);
  const double own_pace = static_cast<double>(own_items) / static_cast<double>(worked.count() + 1);
  return split_pace >= kSplitGain * own_pace;
}

void KernelThreads::note_stall(Clock::time_point now, Clock::duration waited, Clock::duration worked, int64_t items,
                               int64_t own_items) {
  // A worker the host preempted in the middle of a chunk holds the caller up for a time
  // slice, and the caller does most of the items itself meanwhile. When over a window the
  // split's pace (items / all the time) is not kSplitGain above the caller's own (its
  // items / its working time), the caller works alone for a while (one thread on a shared
  // host beats two that wait for each other), then tries again. A worker that is merely
  // slower still adds its items, so the split stays.
  window_worked_ += worked;
  window_total_ += waited + worked;
  window_items_ += items;
  window_own_items_ += own_items;
  if (window_total_ < kStallWindow) return;
  if (!split_pays(window_items_, window_own_items_, window_total_, window_worked_)) serial_until_ = now + kSerialTime;
  window_worked_ = window_total_ = {};
  window_items_ = window_own_items_ = 0;
}

}  // namespace specd::kernels
