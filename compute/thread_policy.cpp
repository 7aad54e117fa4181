#include "compute/thread_policy.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace specd {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> parse_number(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> quota_at(const fs::path& dir) {
  if (std::string v2 = read_text(dir / "cpu.max"); !v2.empty()) return parse_cgroup2_cpu_max(v2);
  auto quota = parse_number(read_text(dir / "cpu.cfs_quota_us"));
  auto period = parse_number(read_text(dir / "cpu.cfs_period_us"));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;  // -1: no quota
  return *quota / *period;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::istringstream s(line);
  for (std::string part; std::getline(s, part, sep);) parts.push_back(part);
  return parts;
}

// The cgroup directories that hold this process's CPU quota: the v2 hierarchy's, and the
// v1 `cpu` controller's. Each as {mount point, the process's directory under it}.
std::vector<std::pair<fs::path, fs::path>> own_cgroup_dirs() {
  std::string v2_path, v1_path;
  for (const std::string& line : split(read_text("/proc/self/cgroup"), '\n')) {
    auto f = split(line, ':');  // "0::/a/b" (v2) or "3:cpu,cpuacct:/a/b" (v1)
    if (f.size() < 3) continue;
    if (f[0] == "0" && f[1].empty()) v2_path = f[2];
    for (const std::string& c : split(f[1], ',')) {
      if (c == "cpu") v1_path = f[2];
    }
  }
  std::vector<std::pair<fs::path, fs::path>> dirs;
  for (const std::string& line : split(read_text("/proc/self/mountinfo"), '\n')) {
    // "36 25 0:31 <root> <mount point> <options> ... - <fstype> <source> <super options>"
    auto fields = split(line, ' ');
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || fields.end() - dash < 4) continue;
    const std::string& type = *(dash + 1);
    const fs::path root = fields[3], mount = fields[4];
    auto under = [&](const std::string& path) { return mount / fs::path(path).lexically_relative(root); };
    if (type == "cgroup2" && !v2_path.empty()) dirs.emplace_back(mount, under(v2_path));
    if (type == "cgroup" && !v1_path.empty()) {
      for (const std::string& o : split(*(dash + 3), ',')) {
        if (o == "cpu") dirs.emplace_back(mount, under(v1_path));
      }
    }
  }
  return dirs;
}

}  // namespace

int32_t CpuLimits::usable() const {
  int32_t n = std::max(1, affinity_cpus);
  if (quota_cpus) n = std::min(n, std::max(1, static_cast<int32_t>(std::floor(*quota_cpus + 1e-9))));
  return n;
}

std::optional<double> parse_cgroup2_cpu_max(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto quota = parse_number(text.substr(0, space));  // "max" does not parse: no quota
  auto period = parse_number(text.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return *quota / *period;
}

std::optional<double> cgroup_quota_cpus(const fs::path& root, const fs::path& dir) {
  std::optional<double> lowest;
  fs::path at = dir.lexically_normal();
  const fs::path top = root.lexically_normal();
  for (int depth = 0; depth < 64; ++depth) {
    if (auto q = quota_at(at); q && (!lowest || *q < *lowest)) lowest = q;
    if (at == top || !at.has_relative_path() || at.parent_path() == at) break;
    at = at.parent_path();
  }
  return lowest;
}

CpuLimits read_cpu_limits() {
  CpuLimits limits;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    limits.affinity_cpus = CPU_COUNT(&set);
  } else {
    limits.affinity_cpus = static_cast<int32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  }
  for (const auto& [mount, dir] : own_cgroup_dirs()) {
    if (auto q = cgroup_quota_cpus(mount, dir); q && (!limits.quota_cpus || *q < *limits.quota_cpus)) {
      limits.quota_cpus = q;
    }
  }
  return limits;
}

ThreadPolicy choose_thread_policy(const ThreadRequest& r, const CpuLimits& limits) {
  ThreadPolicy p;
  p.limits = limits;
  p.origin = r.origin;
  p.budget = r.threads > 0 ? r.threads : limits.usable();
  if (!r.draft_lane) {
    p.target_threads = r.target_threads > 0 ? r.target_threads : p.budget;
    p.draft_threads = 0;
  } else {
    // The draft model is the small one: one thread runs it; the target takes the rest.
    p.draft_threads = r.draft_threads > 0 ? r.draft_threads : 1;
    p.target_threads = r.target_threads > 0 ? r.target_threads : std::max(1, p.budget - p.draft_threads);
  }
  // Explicit lane counts raise the budget to what they need on their own; never beyond
  // what the user asked for, and the permits clamp each lane to the budget.
  p.budget = std::max({p.budget, p.target_threads, p.draft_threads});
  return p;
}

ThreadPolicy choose_thread_policy(const ThreadRequest& request) {
  return choose_thread_policy(request, read_cpu_limits());
}

std::string ThreadPolicy::describe() const {
  char quota[32] = "no quota";
  if (limits.quota_cpus) std::snprintf(quota, sizeof quota, "quota %.2f", *limits.quota_cpus);
  char line[192];
  std::snprintf(line, sizeof line, "%d CPUs (affinity %d, %s), budget %d: target %d", limits.usable(),
                limits.affinity_cpus, quota, budget, target_threads);
  std::string out = line;
  // Each lane's count is what it keeps for itself: a call borrows the threads the other
  // lane is not using, so a lone target pass computes on the whole budget.
  if (draft_threads > 0) out += " + draft " + std::to_string(draft_threads) + ", idle threads lent across lanes";
  return out + " (" + origin + ")";
}

void limit_library_thread_pools() { set_blas_threads(1); }

void set_blas_threads(int32_t threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

void ensure_quiet_thread_pools_env(char** argv) {
  bool changed = false;
  for (auto [name, value] : {std::pair{"OMP_WAIT_POLICY", "passive"}, std::pair{"OPENBLAS_NUM_THREADS", "1"}}) {
    if (std::getenv(name) == nullptr) {
      setenv(name, value, 0);
      changed = true;
    }
  }
  if (!changed) return;
  // By its real path: a process started from /proc/self/exe is named "exe" in ps, top and
  // pkill. Returns only on failure: run as we are.
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return;
  path[n] = '\0';
  execv(path, argv);
}

}  // namespace specd
