#pragma once
// The one setup of a thread's compute threads: a compute lane's thread, or the main
// thread of a tool that runs a model without lanes. For the scope's life the kernels
// called on this thread (kernels::KernelThreads::current()) run on its KernelThreads,
// and libtorch's few remaining ops (sampling) stay on this thread, so no OpenMP team
// forms. Create and destroy it on the thread it serves; scopes nest.
#include <cstdint>
#include <string>

#include "engine/kernels/kernel_threads.hpp"

namespace specd {

class ComputeThreadScope {
 public:
  // The arguments of kernels::KernelThreads: `threads` in all, `reserved` of them (0: all)
  // per call plus those borrowed from `lender`; the workers are named `name`.
  explicit ComputeThreadScope(int32_t threads, int32_t reserved = 0, kernels::ThreadLender* lender = nullptr,
                              const std::string& name = "kernel worker");
  ~ComputeThreadScope();
  ComputeThreadScope(const ComputeThreadScope&) = delete;
  ComputeThreadScope& operator=(const ComputeThreadScope&) = delete;

  kernels::KernelThreads& threads() { return threads_; }

 private:
  kernels::KernelThreads threads_;
  kernels::KernelThreads* previous_;
};

}  // namespace specd
