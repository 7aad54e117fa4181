#include "actors/engine_runner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

namespace specd {

EngineRunner::EngineRunner(EngineConfig config)
    : work_(boost::asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {
  try {
    engine_.emplace(io_.get_executor(), std::move(config));
  } catch (...) {
    work_.reset();
    thread_.join();
    throw;
  }
}

EngineRunner::~EngineRunner() {
  auto stop = [this]() -> boost::asio::awaitable<void> { co_await engine_->stop(std::chrono::seconds(0)); };
  try {
    boost::asio::co_spawn(io_, stop, boost::asio::use_future).get();
  } catch (...) {
    // Stopping failed (the process is exiting on an error already): the lanes still
    // join in the engine's destructor.
  }
  work_.reset();
  thread_.join();
  engine_.reset();
}

GenerateResult EngineRunner::generate(GenerateRequest request, BurstHandler on_burst) {
  auto run = [&]() -> boost::asio::awaitable<GenerateResult> {
    co_return co_await engine_->generate(std::move(request), std::move(on_burst));
  };
  return boost::asio::co_spawn(io_, run, boost::asio::use_future).get();
}

EngineSnapshot EngineRunner::snapshot() {
  auto ask = [this]() -> boost::asio::awaitable<EngineSnapshot> { co_return co_await engine_->snapshot(); };
  return boost::asio::co_spawn(io_, ask, boost::asio::use_future).get();
}

}  // namespace specd
