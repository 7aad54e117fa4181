#include "compute/compute_permits.hpp"

#include <algorithm>

namespace specd {

ComputePermits::ComputePermits(int32_t total) : total_(std::max(1, total)), free_(total_) {}

int32_t ComputePermits::acquire(int32_t n) {
  n = std::clamp(n, 1, total_);
  std::unique_lock lock(mutex_);
  ++waiting_;
  freed_.wait(lock, [&] { return free_ >= n; });
  --waiting_;
  free_ -= n;
  return n;
}

int32_t ComputePermits::waiting() {
  std::lock_guard lock(mutex_);
  return waiting_;
}

int32_t ComputePermits::borrow(int32_t n) {
  std::lock_guard lock(mutex_);
  if (waiting_ > 0 || free_ <= 0) return 0;
  n = std::min(n, free_);
  free_ -= n;
  return n;
}

void ComputePermits::release(int32_t n) {
  {
    std::lock_guard lock(mutex_);
    free_ += n;
  }
  freed_.notify_all();
}

}  // namespace specd
