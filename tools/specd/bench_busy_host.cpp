#include "tools/specd/bench_busy_host.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include "actors/engine_runner.hpp"
#include "engine/base/errors.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"

extern char** environ;

namespace specd::cli {

namespace {

constexpr int32_t kMostNeighbours = 2;

// N CPU-bound neighbour processes for the lifetime of the object.
class Neighbours {
 public:
  explicit Neighbours(int32_t n) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    char* argv[] = {const_cast<char*>("yes"), nullptr};
    for (int32_t i = 0; i < n; ++i) {
      pid_t pid = 0;
      if (posix_spawnp(&pid, "yes", &actions, nullptr, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        stop();
        throw SpecdError(ErrorCode::internal, "bench --busy-host: cannot start `yes`");
      }
      pids_.push_back(pid);
    }
    posix_spawn_file_actions_destroy(&actions);
    if (n > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let them reach full speed
  }
  ~Neighbours() { stop(); }

 private:
  void stop() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
    pids_.clear();
  }
  std::vector<pid_t> pids_;
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

struct Sample {
  double tokens_per_second = 0;
  double cpu_share = 0;  // CPU seconds of this process over wall seconds
};

Sample measure(EngineRunner& runner, const GenerateRequest& request, int32_t generations) {
  int64_t tokens = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t g = 0; g < generations; ++g) tokens += runner.generate(request).usage.completion_tokens;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {tokens / wall, (cpu_seconds() - cpu0) / wall};
}

}  // namespace

void run_busy_host_bench(const PairArgs& pair_args, const BusyHostArgs& a, bool json) {
  const PairChoice pair = choose_pair(pair_args);
  if (!pair.spec.enabled) throw SpecdError(ErrorCode::invalid_argument, "bench --busy-host needs a draft");
  EngineRunner runner(pair.engine);
  const ThreadPolicy& threads = runner.engine().thread_policy();
  GenerateRequest base;
  base.prompt = a.prompt;
  base.max_tokens = a.max_tokens;
  base.ignore_eos = true;  // every generation has the same length
  base.sampling.temperature = 0;
  GenerateRequest target_only = base, speculative = base;
  target_only.spec.enabled = false;
  speculative.spec = pair.spec;
  const std::map<std::string, const GenerateRequest*> modes{{"target_only", &target_only},
                                                            {"speculative", &speculative}};
  for (const auto& [name, request] : modes) measure(runner, *request, 1);  // warm-up

  std::map<std::string, std::vector<std::vector<Sample>>> samples;  // mode -> N -> repeats
  for (int32_t r = 0; r < a.repeat; ++r) {
    for (int32_t n = 0; n <= kMostNeighbours; ++n) {
      Neighbours neighbours(n);
      for (const auto& [name, request] : modes) {
        auto& per_n = samples[name];
        per_n.resize(kMostNeighbours + 1);
        per_n[n].push_back(measure(runner, *request, a.generations));
        std::cerr << "bench: busy-host repeat " << r << " N=" << n << " " << name << " "
                  << per_n[n].back().tokens_per_second << " tokens/s\n";
      }
    }
  }
  boost::json::object modes_json;
  for (const auto& [name, per_n] : samples) {
    boost::json::array rows;
    for (int32_t n = 0; n <= kMostNeighbours; ++n) {
      std::vector<double> tps, ratio, share;
      for (size_t r = 0; r < per_n[n].size(); ++r) {
        tps.push_back(per_n[n][r].tokens_per_second);
        ratio.push_back(per_n[n][r].tokens_per_second / per_n[0][r].tokens_per_second);  // paired within a repeat
        share.push_back(per_n[n][r].cpu_share);
      }
      rows.push_back({{"neighbours", n},
                      {"tokens_per_second", median(tps)},
                      {"busy_over_quiet", median(ratio)},
                      {"busy_over_quiet_per_repeat", boost::json::value_from(ratio)},
                      {"cpu_share", median(share)}});
    }
    modes_json[name] = rows;
  }
  boost::json::object out{
      {"prompt", a.prompt},   {"max_tokens", a.max_tokens},          {"generations", a.generations},
      {"repeat", a.repeat},   {"mode", mode_description(pair.spec)}, {"threads", threads_json(threads)},
      {"results", modes_json}};
  if (json) {
    print_json(out);
    return;
  }
  std::printf("threads: %s\n%-12s %10s %12s %10s %10s\n", threads.describe().c_str(), "mode", "neighbours", "tokens/s",
              "busy/quiet", "cpu share");
  for (const auto& [name, rows] : modes_json) {
    for (const auto& row : rows.as_array()) {
      const auto& o = row.as_object();
      std::printf("%-12s %10lld %12.1f %10.2f %10.2f\n", std::string(name).c_str(),
                  static_cast<long long>(o.at("neighbours").as_int64()), o.at("tokens_per_second").as_double(),
                  o.at("busy_over_quiet").as_double(), o.at("cpu_share").as_double());
    }
  }
}

}  // namespace specd::cli
