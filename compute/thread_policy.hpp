#pragma once
// How many compute threads specd uses, chosen for the machine the process actually has:
// the CPUs it may run on (sched_getaffinity) and its cgroup CPU quota (v2 `cpu.max`, or
// v1 `cpu.cfs_quota_us`). One policy for every entry point: `specd generate`, `bench`,
// `serve` and the embedding Engine. Chosen once at start-up; a plain value afterwards.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace specd {

struct CpuLimits {
  int32_t affinity_cpus = 1;         // CPUs in the process's affinity mask
  std::optional<double> quota_cpus;  // cgroup quota / period; nullopt: no quota
  // The CPUs the process can keep busy: the affinity count, cut to the whole CPUs of
  // the quota (a quota of 1.5 gives 1: a second thread would be throttled every period).
  int32_t usable() const;
};

CpuLimits read_cpu_limits();

// "150000 100000" -> 1.5; "max 100000" -> nullopt. Throws nothing: bad text is no quota.
std::optional<double> parse_cgroup2_cpu_max(std::string_view text);
// The smallest quota on the way from `dir` up to `root` (a child may not exceed its
// parents), reading `cpu.max` (v2) or `cpu.cfs_quota_us` and `cpu.cfs_period_us` (v1).
std::optional<double> cgroup_quota_cpus(const std::filesystem::path& root, const std::filesystem::path& dir);

// Intra-op threads per compute lane. `threads` (0: automatic) is the budget across both
// lanes: with a separate draft lane the draft gets one thread and the target the rest.
// A lane count given explicitly (target_threads / draft_threads > 0) wins over the split.
struct ThreadRequest {
  int32_t threads = 0;
  int32_t target_threads = 0;
  int32_t draft_threads = 0;
  bool draft_lane = false;      // a second lane runs beside the target's
  const char* origin = "auto";  // who asked: "auto", "--threads", "[engine]"
};

struct ThreadPolicy {
  CpuLimits limits;
  int32_t budget = 1;          // threads computing at once, across lanes (ComputePermits)
  int32_t target_threads = 1;  // intra-op threads of the target lane
  int32_t draft_threads = 0;   // of the draft lane; 0 without one
  std::string origin;
  // One line for logs:
  // "2 CPUs (affinity 2, no quota), budget 2: target 1 + draft 1, idle threads lent across lanes (auto)".
  std::string describe() const;
};

ThreadPolicy choose_thread_policy(const ThreadRequest& request, const CpuLimits& limits);
ThreadPolicy choose_thread_policy(const ThreadRequest& request);  // reads this process's limits

// OpenBLAS single-threaded: the lanes are the parallelism (their kernel threads), and
// its pool busy-waits beside them. The lanes keep libtorch on one thread, so no OpenMP
// team forms either.
void limit_library_thread_pools();
// OpenBLAS's thread count, where OpenBLAS is the loaded BLAS (`bench --kernels` sets its
// baseline's); nothing otherwise.
void set_blas_threads(int32_t threads);

// For libtorch ops outside the lanes: libgomp reads OMP_WAIT_POLICY once, when it loads,
// and OpenBLAS starts its pool then; a program must have them in its environment before main. When either is unset,
// sets OMP_WAIT_POLICY=passive and OPENBLAS_NUM_THREADS=1 and re-executes the program
// (by its path) with the same arguments; returns only when nothing was missing or
// the exec failed. Values the user set are kept.
void ensure_quiet_thread_pools_env(char** argv);

}  // namespace specd
