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

#include "engine/base/errors.hpp"
#include "engine/request/finish_reason.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/request/spec_settings.hpp"
#include "compute/thread_policy.hpp"

namespace specd {

class BurstTrace;
class Tokenizer;
namespace actors {
class RequestActor;
}

struct EngineConfig {
  std::filesystem::path target_dir;
  std::filesystem::path draft_dir;  // empty: no draft model (prompt-lookup drafting or none)
  int32_t max_batch = 32;           // KV slots per model = most requests generating at once
  int64_t max_seq_len = 1024;       // per slot: prompt plus generated tokens (capped at the models' positions)
  int32_t max_waiting = 256;        // admitted-but-waiting bound; beyond it submit fails `overloaded`
  int32_t burst_queue = 256;        // bursts a request's sink may lag before `slow_consumer`
  // Compute threads across both lanes; 0: what the process may use (its CPU affinity
  // and cgroup quota, compute/thread_policy.hpp). The lane counts, when > 0, override the split.
  int32_t threads = 0;
  int32_t target_threads = 0;        // intra-op threads of the target lane (0: the policy's)
  int32_t draft_threads = 0;         // intra-op threads of the draft lane (0: the policy's)
  bool overlap = true;               // draft lane works on newcomers while the target verifies
  bool trace = false;                // record lane and request spans (trace_json, write_trace)
  int32_t trace_capacity = 100'000;  // events the trace ring holds; the newest overwrite the oldest
  int32_t k_max = 8;                 // bound on K for every request
  // Seconds each lane spends at start timing passes for the batch K planner; 0 skips
  // calibration (K is then chosen per request from a cost ratio).
  double calibration_seconds = 2.0;
};

struct GenerateRequest {
  std::string id;                   // unique among requests in flight; empty: the engine assigns one
  std::string prompt;               // text, tokenized with the target's tokenizer (BOS added)
  std::vector<int32_t> prompt_ids;  // used instead of `prompt` when not empty
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<std::string> stop;  // stop strings, matched on accepted text only
  SpecSettings spec;              // per request: on/off, K or adaptive, drafter
  bool ignore_eos = false;        // keep generating past EOS (benchmarks)
};

// One round's accepted tokens for one request.
struct Burst {
  std::string id;
  std::vector<int32_t> token_ids;  // empty only in a final burst carrying held-back text
  std::string text;                // complete UTF-8 characters only; the rest follows later
  // Draft tokens proposed this round, and how many of them the target accepted. A burst
  // that a stop condition cut inside its drafts counts only the drafts it kept.
  int32_t drafted = 0;
  int32_t accepted = 0;
  // Per token_ids entry, the text that token completed (empty when it ends inside a
  // UTF-8 character). Their concatenation may run ahead of `text`, which holds back what
  // could start a stop string; clients colour tokens with it (draft vs target).
  std::vector<std::string> pieces;
  // Null when nothing waits for the write. A sink that writes the burst to a client
  // calls it once that write completed (the trace's `written_us`); a sink that does not
  // write the burst drops it.
  std::function<void()> on_written;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
};

struct Timings {
  double queued_ms = 0;          // submit to admission (KV slots granted)
  double first_token_ms = 0;     // submit to the first burst
  double total_ms = 0;           // submit to finish
  double tokens_per_second = 0;  // completion tokens over first token to finish
};

struct RequestError {
  ErrorCode code;
  std::string message;
};

struct GenerateResult {
  std::string id;
  FinishReason finish_reason = FinishReason::length;
  std::optional<RequestError> error;  // set when finish_reason is error
  std::vector<int32_t> token_ids;
  std::string text;
  Usage usage;
  SpecStats spec;
  Timings timings;
};

// Decode rounds (rounds that prefilled no newcomer) of one batch size: how many, their
// wall seconds and the tokens they delivered.
struct RoundTally {
  int64_t rounds = 0;
  double seconds = 0;
  int64_t tokens = 0;
};

// Counters and gauges for metrics and tests.
struct EngineSnapshot {
  int32_t waiting = 0, running = 0;
  int32_t target_slots_in_use = 0, draft_slots_in_use = 0, slots_total = 0;
  int64_t live_requests = 0;  // request actors alive (finished ones included until freed)
  int64_t requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  int64_t rounds = 0;
  int64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;  // vLLM's speculative counters
  std::vector<int64_t> accepted_per_position;
  double cost_ratio = 0;  // measured draft step / verify pass
  // Indexed by rows - 1: rounds in which no row drafted, and rounds in which some did.
  // Their tokens per second at equal rows, measured side by side, say whether
  // speculation paid in the rounds that used it, free of the drift between runs.
  std::vector<RoundTally> plain_rounds, drafting_rounds;
};

using BurstHandler = std::function<void(const Burst&)>;
using DoneHandler = std::function<void(GenerateResult)>;

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
  // on_done with finish_reason error, never as exceptions.
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
  // The configuration in use: max_seq_len capped at the models' max_position_embeddings.
  const EngineConfig& config() const;
  // The compute threads chosen at construction (lanes' intra-op threads and budget).
  const ThreadPolicy& thread_policy() const;
  // Recorded trace (config.trace): lane busy intervals and request spans, as Chrome
  // trace-event JSON (docs/trace_format.md): the events that end within the last
  // `seconds` (all when unset), of one request when `request_id` is set.
  std::string trace_json(std::optional<double> seconds = {}, std::optional<std::string> request_id = {}) const;
  void write_trace(const std::filesystem::path& path) const;
  struct LaneInterval {
    std::string lane, label;
    double start_us, end_us;
  };
  std::vector<LaneInterval> lane_intervals() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace specd
