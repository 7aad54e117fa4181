#pragma once
// specd's embedding API: the whole serving engine (actors, compute lanes, models) on an
// executor the caller already runs. The one public header: no libtorch, no JSON.
//
//   boost::asio::io_context io;
//   specd::Engine engine(io.get_executor(), config);
//   co_spawn(io, [&]() -> awaitable<void> {
//     auto result = co_await engine.generate(request, [](const specd::Burst& b) { ... });
//     co_await engine.stop(std::chrono::seconds(5));
//   }, detached_with_logging);
//   io.run();
//
// Threads: construct, submit, cancel, generate and stop from any thread. Burst and done
// handlers run on the request's own strand of the engine's executor, one at a time per
// request, never on a compute lane.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine_config.hpp"
#include "actors/engine_snapshot.hpp"
#include "actors/generate_result.hpp"
#include "compute/thread_policy.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/request/generate_request.hpp"

namespace specd {

class ChatTemplate;
class Tokenizer;
namespace actors {
class RequestActor;
}

// A request in flight. Dropping the handle cancels the request (at the next round
// boundary) unless it finished or was detached.
class RequestHandle {
 public:
  RequestHandle() = default;
  explicit RequestHandle(std::shared_ptr<actors::RequestActor> actor);
  RequestHandle(RequestHandle&&) noexcept = default;
  RequestHandle& operator=(RequestHandle&& other) noexcept;
  ~RequestHandle();

  const std::string& id() const;
  bool finished() const;
  void cancel();
  void detach() { actor_.reset(); }  // let the request run to completion unowned

 private:
  std::shared_ptr<actors::RequestActor> actor_;
};

class Engine {
 public:
  // Loads the models (blocking) and starts the lanes and actors on `executor`.
  // Throws SpecdError for bad model directories or configuration.
  Engine(boost::asio::any_io_executor executor, EngineConfig config);
  // Call stop() first; the destructor stops the lanes but cannot wait for actors.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Callback form. Errors (bad request, overloaded, shutting down) arrive through
  // on_done with finish_reason error, never as exceptions. The caller's thread renders
  // and tokenizes the input; a grammar not compiled yet compiles on the engine's grammar
  // thread (a large schema takes up to a second), so the caller is never held by it.
  RequestHandle submit(GenerateRequest request, BurstHandler on_burst, DoneHandler on_done);
  // Awaitable form: bursts through on_burst, the result when done. Throws SpecdError
  // for a request that ended in error; cancelling the awaiting coroutine cancels it.
  boost::asio::awaitable<GenerateResult> generate(GenerateRequest request, BurstHandler on_burst = {});
  // Cancels a request in flight by id (at the next round boundary). Unknown ids are ignored.
  void cancel(const std::string& id);
  // Stops taking requests, lets running ones finish until `deadline`, cancels the rest,
  // stops the actors and joins the lanes.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds deadline);
  boost::asio::awaitable<EngineSnapshot> snapshot();

  // Request actors alive now (also after stop(); snapshot() needs the running scheduler).
  int64_t live_requests() const;
  const Tokenizer* tokenizer() const;
  // The target's chat template, which renders requests given as messages; null when the
  // target directory has none specd knows (such requests fail unknown_chat_template).
  const ChatTemplate* chat_template() const;
  // The configuration in use: max_seq_len resolved (0: from the models and the KV
  // budget) and capped at the models' max_position_embeddings.
  const EngineConfig& config() const;
  // The compute threads chosen at construction (lanes' intra-op threads and budget).
  const ThreadPolicy& thread_policy() const;
  // The KV cache chosen at construction, as the start-up line prints it: its bytes,
  // blocks, tokens and whether the prefix cache is on.
  const std::string& kv_cache_summary() const;
  // The compiled-grammar cache's budget, as the start-up line prints it:
  // "grammar cache 256.0 MiB ([engine] grammar_cache_memory)".
  std::string grammar_cache_summary() const;
  // The models' weights in memory, as the start-up line prints them: bytes and format
  // ("target 1.59 GB int4, draft 0.02 GB stored f16").
  const std::string& weights_summary() const;
  // max_seq_len and where it came from, as the start-up line prints it:
  // "max_seq_len 1024 (the models' max_position_embeddings)".
  const std::string& context_summary() const;
  // The round costs the planner starts from (the target's pass per row count, a draft
  // step per batch size), measured at construction on the lanes' kernels and threads;
  // empty without calibration. The start-up line prints their describe().
  const RoundCostTable& start_costs() const;
  // Recorded trace (config.trace): lane busy intervals and request spans, as Chrome
  // trace-event JSON (docs/trace_format.md): the events that end within the last
  // `seconds` (all when unset), of one request when `request_id` is set.
  std::string trace_json(std::optional<double> seconds = {}, std::optional<std::string> request_id = {}) const;
  void write_trace(const std::filesystem::path& path) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace specd
