// Lifetime under churn: 10,000 mixed requests (speculation on and off, sampling, stop
// strings) with random cancels (by handle, by id, by dropping the handle, before and
// during generation) leave no KV slot, request actor or waiting entry behind, and the
// process's memory returns to its baseline.
#include "tests/support/doctest_torch.hpp"

#include <fstream>
#include <future>
#include <random>

#include "actors/engine.hpp"
#include "tests/support/engine_runner.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

const std::filesystem::path kModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";
constexpr int kWarmup = 500;
constexpr int kRequests = 10'000;

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// Runs `count` random requests with at most `in_flight` outstanding; returns how many
// finished by each reason.
std::map<FinishReason, int> churn(Engine& engine, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const char* texts[] = {"ROMEO:\n", "JULIET:\nO", "HAMLET:\nTo be", "LUCIO:\n", "First Citizen:\nWe"};
  std::mutex mutex;
  std::condition_variable cv;
  int outstanding = 0;
  std::map<FinishReason, int> reasons;
  int double_done = 0;
  for (int i = 0; i < count; ++i) {
    GenerateRequest r;
    r.id = "churn-" + std::to_string(i);
    r.prompt = texts[rng() % 5];
    r.max_tokens = 1 + static_cast<int32_t>(rng() % 8);
    r.spec.enabled = rng() % 4 != 0;
    r.spec.k = 1 + static_cast<int32_t>(rng() % 6);
    r.spec.adaptive = rng() % 3 == 0;
    if (rng() % 3 == 0) r.sampling.temperature = 0.8, r.sampling.seed = rng();
    if (rng() % 5 == 0) r.stop = {"e"};
    const int action = static_cast<int>(rng() % 10);
    // 0: cancel now, 1: by id, 2: drop handle, 3: cancel on first burst
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return outstanding < 48; });
      ++outstanding;
    }
    auto handle = std::make_shared<RequestHandle>();
    std::shared_ptr<RequestHandle> cancel_on_burst = action == 3 ? handle : nullptr;
    *handle = engine.submit(
        r,
        [cancel_on_burst](const Burst&) {
          if (cancel_on_burst) cancel_on_burst->cancel();
        },
        [&, calls = std::make_shared<int>(0)](GenerateResult res) {
          std::lock_guard lock(mutex);
          if (++*calls > 1) ++double_done;
          reasons[res.finish_reason] += 1;
          --outstanding;
          cv.notify_all();
        });
    if (action == 0) handle->cancel();
    if (action == 1) engine.cancel(r.id);
    if (action == 2) handle.reset();                   // dropping the handle cancels
    if (action != 2 && action != 3) handle->detach();  // the rest run to completion unowned
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return outstanding == 0; });
  CHECK(double_done == 0);  // every request finishes exactly once
  return reasons;
}

}  // namespace

TEST_CASE("10,000 mixed requests with random cancels return slots, actors and memory to baseline") {
  IoThreads io(2);
  EngineConfig c;
  c.target_dir = kModels / "target";
  c.draft_dir = kModels / "draft";
  c.max_batch = 32;
  c.sequence.max_seq_len = 64;
  Engine engine(io.io().get_executor(), c);
  churn(engine, kWarmup, 1);  // warm-up: allocator pools and caches reach their working size
  const int64_t baseline = rss_kib();
  const auto reasons = churn(engine, kRequests, 2);
  int total = 0;
  for (auto [reason, n] : reasons) {
    MESSAGE(std::string(finish_reason_name(reason)) << ": " << n);
    total += n;
  }
  CHECK(total == kRequests);
  CHECK(reasons.count(FinishReason::cancelled));
  CHECK(reasons.count(FinishReason::length));
  CHECK(reasons.count(FinishReason::stop));
  CHECK_FALSE(reasons.count(FinishReason::error));
  const EngineSnapshot s = io.run(engine.snapshot());
  CHECK(s.target_slots_in_use == 0);
  CHECK(s.draft_slots_in_use == 0);
  CHECK(s.waiting == 0);
  CHECK(s.running == 0);
  CHECK(s.requests_finished == kWarmup + kRequests);
  const int64_t growth = rss_kib() - baseline;
  MESSAGE("RSS baseline " << baseline << " KiB, growth after 10,000 requests " << growth << " KiB");
  CHECK(growth < 16 * 1024);  // no per-request leak: 10,000 leaked KiB-sized records would exceed it
  io.run(engine.stop(std::chrono::seconds(5)));
  // The request actors are freed once their coroutines end, which stop() waits for.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(engine.live_requests() == 0);
}
