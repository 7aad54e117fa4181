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

}  // namespace specd::testing
