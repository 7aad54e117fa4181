#pragma once
// RequestActor: one per request. Owns the request's outbound side: its bounded queue of
// bursts, the tokens and text sent so far, its timings, and the caller's burst and done
// handlers. The scheduler sends it each round's burst, already cut and turned into text
// by the request's RequestOutput (engine/request/request_output.hpp, which decides
// when the request is finished), and, once the request has left the batch and its KV
// slots are free, the finish. Lives on its own strand; its state is touched only by run().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/generate_result.hpp"
#include "engine/request/request_output.hpp"

namespace specd {
class TraceRecorder;
}

namespace specd::actors {

class SchedulerActor;
using Clock = std::chrono::steady_clock;

class RequestActor : public std::enable_shared_from_this<RequestActor> {
 public:
  struct Finished {
    FinishReason reason;
    std::optional<RequestError> error;
    SpecStats stats;
    int32_t prompt_tokens = 0;
    Clock::time_point admitted_at;
    std::string tail;           // text held back until the end (RequestOutput::flush)
    int32_t cached_tokens = 0;  // prompt tokens the prefix cache held
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Burst, Finished>;

  struct Setup {
    std::string id;
    uint64_t number;  // engine-wide, never reused (ids may be)
    BurstHandler on_burst;
    DoneHandler on_done;
    int32_t queue_capacity;
    std::shared_ptr<std::atomic<int64_t>> live_count;
    std::shared_ptr<TraceRecorder> trace;  // its bursts and its end go to the request's trace track
  };

  RequestActor(asio::any_io_executor strand, SchedulerActor& scheduler, Setup setup);
  ~RequestActor();

  // Starts run() on the strand; the coroutine keeps the actor alive until finished.
  void start();
  // A round's burst; false when the sink lags `queue_capacity` bursts behind.
  bool post_burst(Burst burst);
  // The finish is never dropped: it waits for room in the mailbox.
  void post_finished(Finished finished);
  // From any thread: no more bursts are delivered, and the scheduler frees the slots at
  // the next round boundary.
  void cancel();

  const std::string& id() const { return id_; }
  uint64_t number() const { return number_; }
  bool finished() const { return finished_.load(); }
  bool cancel_requested() const { return cancel_requested_.load(); }
  Clock::time_point submitted_at() const { return submitted_at_; }

 private:
  awaitable<void> run();
  void deliver(Burst& burst);
  void finish(Finished& finished);

  asio::any_io_executor strand_;
  SchedulerActor& scheduler_;
  Mailbox<Message> mailbox_;
  const std::string id_;
  const uint64_t number_;
  const Clock::time_point submitted_at_;
  BurstHandler on_burst_;
  DoneHandler on_done_;
  std::shared_ptr<std::atomic<int64_t>> live_count_;
  std::shared_ptr<TraceRecorder> trace_;  // null when the engine records no trace

  std::atomic<bool> cancel_requested_{false};
  std::atomic<bool> finished_{false};
  std::vector<int32_t> tokens_;
  std::vector<TokenLogprobs> logprobs_;
  std::string text_;
  std::optional<Clock::time_point> first_token_at_;
};

}  // namespace specd::actors
