// ComputeThreadScope (compute/compute_threads): the one setup of a thread's kernel
// threads, used by the compute lanes and by tools that run a model on their own thread.
#include "compute/compute_threads.hpp"

#include <ATen/Parallel.h>
#include <doctest/doctest.h>

#include <utility>

#include "compute/compute_lane.hpp"
#include "compute/compute_permits.hpp"

using namespace specd;
using kernels::KernelThreads;

TEST_CASE("a scope installs its kernel threads on this thread, keeps libtorch on it and restores the outer ones") {
  REQUIRE(KernelThreads::current() == nullptr);
  {
    ComputeThreadScope outer(3);
    CHECK(KernelThreads::current() == &outer.threads());
    CHECK(outer.threads().size() == 3);
    CHECK(outer.threads().reserved() == 3);
    CHECK(at::get_num_threads() == 1);
    {
      ComputeThreadScope inner(2, 1);
      CHECK(KernelThreads::current() == &inner.threads());
      CHECK(inner.threads().reserved() == 1);
    }
    CHECK(KernelThreads::current() == &outer.threads());
  }
  CHECK(KernelThreads::current() == nullptr);
}

TEST_CASE("a lane's jobs run on its own kernel threads: the whole budget, its own share reserved") {
  ComputePermits permits(3);
  ComputeLane lane({"draft lane", 1, &permits}, nullptr);
  auto seen = [] {
    const KernelThreads* t = KernelThreads::current();
    return t ? std::pair{t->size(), t->reserved()} : std::pair{0, 0};
  };
  CHECK(lane.run_blocking("probe", seen) == std::pair{3, 1});
  CHECK(KernelThreads::current() == nullptr);  // the caller's thread is untouched

  ComputeLane alone({"target lane", 2, nullptr}, nullptr);
  CHECK(alone.run_blocking("probe", seen) == std::pair{2, 2});
}
