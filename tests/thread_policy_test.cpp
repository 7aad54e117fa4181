#include "compute/thread_policy.hpp"

#include <doctest/doctest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "compute/compute_permits.hpp"
#include "tests/support/temp_dir.hpp"

using specd::testing::TempDir;

using namespace specd;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

CpuLimits limits(int32_t affinity, std::optional<double> quota) {
  CpuLimits l;
  l.affinity_cpus = affinity;
  l.quota_cpus = quota;
  return l;
}

}  // namespace

TEST_CASE("cgroup v2 cpu.max parses to CPUs, and 'max' is no quota") {
  CHECK(parse_cgroup2_cpu_max("150000 100000\n") == 1.5);
  CHECK(parse_cgroup2_cpu_max("50000 100000") == 0.5);
  CHECK_FALSE(parse_cgroup2_cpu_max("max 100000\n").has_value());
  CHECK_FALSE(parse_cgroup2_cpu_max("garbage").has_value());
  CHECK_FALSE(parse_cgroup2_cpu_max("").has_value());
}

TEST_CASE("the quota is the smallest on the way up to the hierarchy's root") {
  TempDir tmp;
  write(tmp.path / "a" / "cpu.max", "200000 100000\n");
  write(tmp.path / "a" / "b" / "cpu.max", "max 100000\n");
  CHECK(cgroup_quota_cpus(tmp.path, tmp.path / "a" / "b") == 2.0);  // the parent's limit holds
  write(tmp.path / "a" / "b" / "cpu.max", "300000 200000\n");
  CHECK(cgroup_quota_cpus(tmp.path, tmp.path / "a" / "b") == 1.5);
  CHECK_FALSE(cgroup_quota_cpus(tmp.path, tmp.path).has_value());
}

TEST_CASE("cgroup v1 cfs quota and period give the quota; -1 is none") {
  TempDir tmp;
  write(tmp.path / "c" / "cpu.cfs_quota_us", "50000\n");
  write(tmp.path / "c" / "cpu.cfs_period_us", "100000\n");
  CHECK(cgroup_quota_cpus(tmp.path, tmp.path / "c") == 0.5);
  write(tmp.path / "c" / "cpu.cfs_quota_us", "-1\n");
  CHECK_FALSE(cgroup_quota_cpus(tmp.path, tmp.path / "c").has_value());
}

TEST_CASE("usable CPUs are the affinity count cut to the quota's whole CPUs, at least one") {
  CHECK(limits(8, std::nullopt).usable() == 8);
  CHECK(limits(8, 1.5).usable() == 1);
  CHECK(limits(8, 3.0).usable() == 3);
  CHECK(limits(2, 6.0).usable() == 2);
  CHECK(limits(4, 0.25).usable() == 1);
}

TEST_CASE("the affinity mask is read from the calling thread") {
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof(saved), &saved) == 0);
  const int first = [&] {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &saved)) return c;
    return 0;
  }();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  const CpuLimits pinned = read_cpu_limits();
  sched_setaffinity(0, sizeof(saved), &saved);
  CHECK(pinned.affinity_cpus == 1);
  CHECK(read_cpu_limits().affinity_cpus == CPU_COUNT(&saved));
}

TEST_CASE("automatic policy: the draft lane takes one thread, the target the rest") {
  ThreadPolicy two = choose_thread_policy({0, 0, 0, true, "auto"}, limits(2, std::nullopt));
  CHECK(two.budget == 2);
  CHECK(two.target_threads == 1);
  CHECK(two.draft_threads == 1);
  ThreadPolicy alone = choose_thread_policy({0, 0, 0, false, "auto"}, limits(2, std::nullopt));
  CHECK(alone.target_threads == 2);
  CHECK(alone.draft_threads == 0);
  ThreadPolicy eight = choose_thread_policy({0, 0, 0, true, "auto"}, limits(16, 8.0));
  CHECK(eight.budget == 8);
  CHECK(eight.target_threads == 7);
  // One CPU: both lanes keep a thread, and the budget of one makes them take turns.
  ThreadPolicy one = choose_thread_policy({0, 0, 0, true, "auto"}, limits(4, 1.0));
  CHECK(one.budget == 1);
  CHECK(one.target_threads == 1);
  CHECK(one.draft_threads == 1);
}

TEST_CASE("--threads and explicit lane counts override the machine's figures") {
  ThreadPolicy asked = choose_thread_policy({4, 0, 0, true, "--threads"}, limits(2, std::nullopt));
  CHECK(asked.budget == 4);
  CHECK(asked.target_threads == 3);
  CHECK(asked.origin == "--threads");
  ThreadPolicy lanes = choose_thread_policy({0, 3, 2, true, "[engine]"}, limits(2, std::nullopt));
  CHECK(lanes.target_threads == 3);
  CHECK(lanes.draft_threads == 2);
  CHECK(lanes.budget == 3);
  CHECK(lanes.describe() ==
        "2 CPUs (affinity 2, no quota), budget 3: target 3 + draft 2, idle threads lent across lanes ([engine])");
}

TEST_CASE("a budget of one permit lets one lane compute at a time") {
  ComputePermits permits(1);
  CHECK(permits.acquire(3) == 1);  // clamped to the budget
  permits.release(1);
  std::atomic<int> running{0}, most{0};
  auto lane = [&] {
    for (int i = 0; i < 200; ++i) {
      const int n = permits.acquire(1);
      most = std::max(most.load(), ++running);
      std::this_thread::yield();
      --running;
      permits.release(n);
    }
  };
  std::thread a(lane), b(lane);
  a.join();
  b.join();
  CHECK(most.load() == 1);
}

TEST_CASE("a budget of two lets both lanes hold a permit at once") {
  ComputePermits permits(2);
  std::atomic<int> holding{0};
  bool together[2] = {false, false};
  auto lane = [&](int i) {
    const int n = permits.acquire(1);
    ++holding;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (holding.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    together[i] = holding.load() == 2;  // seen while still holding its own permit
    permits.release(n);
  };
  std::thread a(lane, 0), b(lane, 1);
  a.join();
  b.join();
  CHECK(together[0]);
  CHECK(together[1]);
}

TEST_CASE("free permits are lent call by call, and never while a lane waits for its own") {
  ComputePermits permits(2);
  CHECK(permits.acquire(1) == 1);  // the target lane's job
  CHECK(permits.borrow(4) == 1);   // the idle draft lane's permit, for one call
  CHECK(permits.borrow(1) == 0);   // nothing left
  permits.give_back(1);

  // The draft lane comes back while the permit is lent: once it waits in acquire(),
  // nothing more is lent, so the borrower's next call runs on its own thread and the
  // waiter gets the permit given back.
  CHECK(permits.borrow(1) == 1);
  std::atomic<bool> draft_ran{false}, draft_may_end{false};
  std::thread draft([&] {
    const int n = permits.acquire(1);
    draft_ran = true;
    while (!draft_may_end) std::this_thread::yield();  // holds its permit until told
    permits.release(n);
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (permits.waiting() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  REQUIRE(permits.waiting() == 1);
  permits.give_back(1);
  // Free but promised to the waiter, or already its: either way nothing to lend.
  CHECK(permits.borrow(1) == 0);
  while (!draft_ran && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  CHECK(draft_ran.load());
  CHECK(permits.borrow(1) == 0);  // the draft lane holds it now
  draft_may_end = true;
  draft.join();
  permits.release(1);
  CHECK(permits.borrow(2) == 2);  // both lanes idle
  permits.give_back(2);
}

namespace {
// Counts the threads that ran a call's chunks.
struct CountingLender : kernels::ThreadLender {
  int32_t lend = 0, lent = 0, returned = 0;
  int32_t borrow(int32_t n) override {
    const int32_t k = std::min(n, lend);
    lent += k;
    return k;
  }
  void give_back(int32_t n) override { returned += n; }
};

int threads_used(kernels::KernelThreads& pool) {
  std::mutex m;
  std::set<std::thread::id> ids;
  // Chunks long enough that a woken worker claims some before the caller finishes.
  pool.parallel_for(64, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(m);
    ids.insert(std::this_thread::get_id());
  });
  return static_cast<int>(ids.size());
}
}  // namespace

TEST_CASE("a lane's kernels run on their reserved threads plus the ones they borrow") {
  CountingLender lender;
  kernels::KernelThreads pool(3, 1, &lender);
  CHECK(pool.size() == 3);
  CHECK(pool.reserved() == 1);
  CHECK(threads_used(pool) == 1);  // nothing to borrow: the caller alone
  CHECK(lender.lent == 0);
  lender.lend = 1;
  CHECK(threads_used(pool) == 2);
  lender.lend = 5;
  CHECK(threads_used(pool) == 3);  // at most size() - reserved() borrowed
  CHECK(lender.lent == 3);
  CHECK(lender.returned == 3);  // every borrowed thread is given back after its call
}
