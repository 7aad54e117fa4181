#include "compute/compute_threads.hpp"

#include <ATen/Parallel.h>

namespace specd {

ComputeThreadScope::ComputeThreadScope(int32_t threads, int32_t reserved, kernels::ThreadLender* lender,
                                       const std::string& name)
    : threads_(threads, reserved, lender, name), previous_(kernels::KernelThreads::current()) {
  kernels::KernelThreads::set_current(&threads_);
  at::set_num_threads(1);
}

ComputeThreadScope::~ComputeThreadScope() { kernels::KernelThreads::set_current(previous_); }

}  // namespace specd
