#include "engine/kernels/kernel_threads.hpp"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specd::kernels {

namespace {

thread_local KernelThreads* t_current = nullptr;

// How long a worker (or the caller waiting for workers) polls before it sleeps on the
// futex. A decode step issues one parallel_for per linear layer, a few microseconds
// apart; a futex wake-up costs several microseconds, so a short spin catches the next
// layer without a system call, while the bound keeps an idle pool off the CPU (a pool
// that spins without bound slowed neighbours 10-30x on this 2-vCPU host).
constexpr auto kSpin = std::chrono::microseconds(50);

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

KernelThreads::KernelThreads(int32_t threads) {
  for (int32_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

KernelThreads::~KernelThreads() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void KernelThreads::run_part(int32_t part) {
  if (part >= parts_) return;
  const int64_t begin = n_ * part / parts_, end = n_ * (part + 1) / parts_;
  if (begin < end) (*fn_)(begin, end);
}

void KernelThreads::worker_loop(int32_t index) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_change(generation_, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    run_part(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void KernelThreads::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  const int64_t by_grain = grain > 0 ? (n + grain - 1) / grain : n;
  const int32_t parts = static_cast<int32_t>(std::min<int64_t>(size(), by_grain));
  if (parts <= 1) return fn(0, n);
  fn_ = &fn;
  n_ = n;
  parts_ = parts;
  pending_.store(static_cast<int32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes fn_, n_, parts_
  generation_.notify_all();
  run_part(0);
  for (int32_t left = pending_.load(std::memory_order_acquire); left != 0;) left = wait_change(pending_, left);
}

}  // namespace specd::kernels
