#pragma once
// Helpers for tests of the actor engine: an io_context run on background threads for
// the test's lifetime, and blocking wrappers that post work to it and wait.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"

namespace specd::testing {

// The io threads a test runs: SPECD_TEST_IO_THREADS when set (e.g. 4, for sanitizer runs
// with sessions and actors resumed on several threads), else the test's own choice.
inline int test_io_threads(int fallback) {
  const char* env = std::getenv("SPECD_TEST_IO_THREADS");
  if (!env || !*env) return fallback;
  const int n = std::stoi(env);
  return n > 0 ? n : fallback;
}

class IoThreads {
 public:
  explicit IoThreads(int threads) : work_(boost::asio::make_work_guard(io_)) {
    for (int i = 0, n = test_io_threads(threads); i < n; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~IoThreads() {
    work_.reset();
    for (auto& t : threads_) t.join();
  }
  boost::asio::io_context& io() { return io_; }

  // Runs an awaitable on the io_context and blocks the caller until it finishes.
  template <class Awaitable>
  auto run(Awaitable a) {
    return boost::asio::co_spawn(io_, std::move(a), boost::asio::use_future).get();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

// The engine's snapshot once every request has ended and both KV pools have their blocks
// back (the scheduler returns an ended request's blocks after its result is delivered),
// or the last snapshot after 5 s.
inline EngineSnapshot settled_snapshot(IoThreads& io, Engine& engine) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    EngineSnapshot s = io.run(engine.snapshot());
    const bool settled =
        s.running == 0 && s.waiting == 0 && s.kv_blocks_referenced_target == 0 && s.kv_blocks_referenced_draft == 0;
    if (settled || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace specd::testing
