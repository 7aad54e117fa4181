#pragma once
// RequestActor: one per request. Owns the request's output stream: the streaming
// detokenizer (complete UTF-8 characters only), the stop-string matcher, the tokens and
// text so far, and the caller's burst and done handlers. The scheduler sends it each
// round's accepted tokens and, once the request has left the batch and its KV slots are
// free, the finish. Lives on its own strand; its state is touched only by run().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/engine.hpp"
#include "engine/request/stop_conditions.hpp"
#include "engine/tokenizer/stream_detokenizer.hpp"

namespace specd::actors {

class SchedulerActor;
using Clock = std::chrono::steady_clock;

class RequestActor : public std::enable_shared_from_this<RequestActor> {
 public:
  struct Tokens {
    std::vector<int32_t> tokens;  // already cut at EOS and max_tokens by the scheduler
    int32_t drafted = 0;
    int32_t accepted = 0;
  };
  struct Finished {
    FinishReason reason;
    std::optional<RequestError> error;
    SpecStats stats;
    int32_t prompt_tokens = 0;
    Clock::time_point admitted_at;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Tokens, Finished>;

  struct Setup {
    std::string id;
    uint64_t number;  // engine-wide, never reused (ids may be)
    std::vector<std::string> stop;
    const Tokenizer* tokenizer;  // null: bursts carry ids only
    BurstHandler on_burst;
    DoneHandler on_done;
    int32_t queue_capacity;
    std::shared_ptr<std::atomic<int64_t>> live_count;
  };

  RequestActor(asio::any_io_executor strand, SchedulerActor& scheduler, Setup setup);
  ~RequestActor();

  // Starts run() on the strand; the coroutine keeps the actor alive until finished.
  void start();
  // A round's tokens; false when the sink lags `queue_capacity` bursts behind.
  bool post_tokens(Tokens tokens);
  // The finish is never dropped: it waits for room in the mailbox.
  void post_finished(Finished finished);
  // From any thread: no more bursts are delivered, and the scheduler frees the slots at
  // the next round boundary.
  void cancel();

  const std::string& id() const { return id_; }
  uint64_t number() const { return number_; }
  bool finished() const { return finished_.load(); }
  Clock::time_point submitted_at() const { return submitted_at_; }

 private:
  awaitable<void> run();
  // Returns true when a stop string ended the request in this burst.
  bool deliver(const Tokens& tokens);
  void finish(const Finished& finished);
  std::string flush_text();

  asio::any_io_executor strand_;
  SchedulerActor& scheduler_;
  Mailbox<Message> mailbox_;
  const std::string id_;
  const uint64_t number_;
  const Clock::time_point submitted_at_;
  const Tokenizer* tokenizer_;
  std::optional<StreamDetokenizer> detokenizer_;
  std::optional<StopStringMatcher> stop_matcher_;
  BurstHandler on_burst_;
  DoneHandler on_done_;
  std::shared_ptr<std::atomic<int64_t>> live_count_;

  std::atomic<bool> cancel_requested_{false};
  std::atomic<bool> finished_{false};
  bool stopped_by_string_ = false;
  std::vector<int32_t> tokens_;
  std::string text_;
  std::optional<Clock::time_point> first_token_at_;
};

}  // namespace specd::actors
