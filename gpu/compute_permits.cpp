#include "gpu/compute_permits.hpp"

#include <algorithm>

namespace specd {

ComputePermits::ComputePermits(int32_t total) : total_(std::max(1, total)), free_(total_) {}

int32_t ComputePermits::acquire(int32_t n) {
  n = std::clamp(n, 1, total_);
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return free_ >= n; });
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
