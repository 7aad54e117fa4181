#pragma once
// The Engine for programs without an event loop of their own (the command line, the
// pair report): its own io thread and a blocking generate(), so they run the same
// actors and rounds as `specd serve`. Call from any thread but its own.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <thread>

#include "actors/engine.hpp"

namespace specd {

class EngineRunner {
 public:
  // Loads and checks the models (Engine's constructor); throws SpecdError.
  explicit EngineRunner(EngineConfig config);
  ~EngineRunner();  // stops the engine (requests in flight are cancelled) and the thread
  EngineRunner(const EngineRunner&) = delete;
  EngineRunner& operator=(const EngineRunner&) = delete;

  // One request to its end. Throws SpecdError for a request that ended in error.
  GenerateResult generate(GenerateRequest request, BurstHandler on_burst = {});
  EngineSnapshot snapshot();
  Engine& engine() { return *engine_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
  std::optional<Engine> engine_;
};

}  // namespace specd
