#pragma once
// SchedulerActor: admission, continuous batching and K planning, one round at a time.
// Requests wait in a bounded queue until CacheManager grants their KV slots and the
// pools have blocks for them (engine/planning/schedule_policy.hpp), then prefill chunk
// by chunk inside the rounds, overlapping the running batch's draft and verify work,
// and join the batch with their first token. It owns each request's round state
// (SpecSequence) and its RequestOutput, which decides on every burst, before it leaves,
// whether the request is finished (EOS, stop strings, max_tokens, a full cache): a
// finished request runs no further round. Rounds go to the lanes as values
// (RoundLanes). Cancels and submissions that arrive during a round are applied at the
// next boundary. A request's slots and KV blocks go back in the step it ends, before
// the scheduler handles another message. When the next round would need more KV blocks than the pools
// hold, the youngest request is preempted: its blocks are dropped and it waits at the
// head of the queue to be prefilled again from its prompt and the tokens it already
// sent (its committed blocks usually still cached), then goes on where it was; its
// client only sees latency. Lives on its strand; its state is touched only by run().
// The loop is scheduler_actor.cpp, the round scheduler_round.cpp.
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/cache_manager.hpp"
#include "actors/engine_snapshot.hpp"
#include "actors/generate_result.hpp"
#include "actors/reply.hpp"
#include "actors/round_lanes.hpp"
#include "actors/scheduler_trace.hpp"
#include "engine/planning/k_planner.hpp"
#include "engine/planning/schedule_policy.hpp"
#include "engine/request/generate_request.hpp"

namespace specd::grammar {
class CompiledGrammar;
}

namespace specd {
class TraceRecorder;
struct Burst;
class Tokenizer;
}  // namespace specd

namespace specd::actors {

class RequestActor;
using Clock = std::chrono::steady_clock;

struct SchedulerOptions {
  int32_t max_waiting = 256;
  bool overlap = true;
  const Tokenizer* tokenizer = nullptr;  // for stop strings and burst text (null: ids only)
  std::vector<int32_t> eos_ids;          // end a request unless it asks to ignore EOS
  int64_t prefill_chunk = 0;             // most prompt tokens prefilled per round (0: no bound)
  // While requests decode, a round carrying prompt chunks takes at most this times a
  // round without (engine/planning/prefill_budget.hpp); 0: always prefill_chunk.
  double prefill_slowdown = 0;
  // The sequence limits, whether a draft model exists and, when calibrated
  // (engine/speculation/cost_calibration.hpp), the round costs: K is then planned for the
  // batch as a whole each round; without them, per request.
  KPlanSetup planning;
  KvBudget kv;  // each model's pool; 0 blocks: no bound (scheduler tests)
};

class SchedulerActor {
 public:
  struct Submit {
    std::shared_ptr<RequestActor> actor;
    GenerateRequest request;                                  // as the caller sent it, validated
    std::vector<int32_t> prompt;                              // its input as token ids
    std::shared_ptr<const grammar::CompiledGrammar> grammar;  // request.grammar compiled; null: free text
  };
  struct Cancel {
    std::string id;
    uint64_t number = 0;  // 0: whichever request has this id
  };
  struct Snapshot {
    Reply<EngineSnapshot> reply;
  };
  struct Stop {
    Clock::time_point deadline;
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Submit, Cancel, Snapshot, Stop>;

  SchedulerActor(asio::any_io_executor strand, SchedulerOptions options, CacheManager& cache, RoundLanes& lanes,
                 TraceRecorder* trace, std::shared_ptr<std::atomic<int64_t>> live_requests);
  ~SchedulerActor();

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // From any thread. Submit fails (false) when the mailbox is full: `overloaded`.
  bool try_submit(Submit submit);
  void cancel(std::string id, uint64_t number);
  awaitable<EngineSnapshot> snapshot();
  awaitable<void> stop(Clock::time_point deadline);

 private:
  struct Entry;  // a request waiting, prefilling or running (actors/scheduler_entry.hpp)
  struct RoundOutcome;
  using Entries = std::vector<std::unique_ptr<Entry>>;

  // The actor's loop (scheduler_actor.cpp): messages, admission, preemption, endings.
  awaitable<void> collect_messages();
  void handle(Message& message);
  void take_snapshot(EngineSnapshot& s, const CacheUsage& usage) const;
  void accept(Submit& submit);
  void admit();
  KvFootprint footprint(const Entry& e) const;
  int64_t blocks_reserved() const;
  // Preempts the youngest requests until the next round fits the pools, as the
  // schedule policy estimates it.
  void preempt_to_fit();
  // When CacheManager finds no room for a round after all: the youngest request, unless
  // it is alone (false).
  bool preempt_youngest();
  void preempt(Entry* victim);
  // The running and prefilling requests, in that order, and when each was first admitted.
  std::vector<Entry*> admitted_entries() const;
  static std::vector<int64_t> admission_times(std::span<Entry* const> entries);
  // Finishes and removes every entry of `entries` that `which` selects.
  template <class Which>
  void finish_where(Entries& entries, const Which& which, FinishReason reason, const RequestError* error = nullptr);
  // The one place a request that was accepted ends: its finish reason decided
  // (compose_finish_reason), its counters kept, its actor told, its slots and blocks released.
  void end(Entries& leaving, FinishReason reason, const RequestError* failure);
  // The entries' slots and their KV blocks go back to CacheManager within the step that
  // ends them: an idle engine holds no block.
  void release_slots(std::span<Entry* const> entries);
  // Once stopping: ends the waiting requests now and, past the deadline, the rest.
  void end_for_stop();
  bool idle() const;
  void post(Message message);

  // The round (scheduler_round.cpp): plan, execute on the lanes, apply.
  awaitable<void> run_round();
  // The running rows' plan, with the K the planner chose for each.
  RoundPlan plan_round(std::optional<BatchPlan>& batch_plan);
  awaitable<RoundOutcome> execute(RoundPlan& plan);
  // The chunks of the prefilling requests' prompts the round's pass carries.
  std::vector<TargetPrefill> choose_chunks(const RoundPlan& plan, RoundOutcome& out);
  // Applies the round's outputs and the newcomers' first tokens; finishes who ended.
  void apply_round(RoundOutcome& outcome, double seconds);
  void start_prefilled(RoundOutcome& outcome);
  // A round's burst, and a newcomer's first token, through the entry's output to its
  // actor (the trace records each as its own span).
  void deliver_round(Entry& entry, const RoundOutput& row, int32_t planned_k);
  void deliver_first_token(Entry& entry, const FirstToken& first);
  // The burst on to the entry's actor; a sink too slow for its bursts ends the request.
  void post_burst(Entry& entry, Burst burst);
  void count_drafts(int32_t drafted, int32_t accepted);
  // Adds a decode round of `rows` rows to the snapshot's plain or drafting tallies.
  void tally_round(size_t rows, bool drafted, double seconds, int64_t delivered);
  void trace_round(const RoundOutcome& outcome, int64_t delivered, const std::optional<BatchPlan>& plan);
  // The median seconds of the last rounds without newcomers (0: none yet).
  double recent_round_seconds() const;

  asio::any_io_executor strand_;
  const SchedulerOptions options_;
  CacheManager& cache_;
  RoundLanes& lanes_;
  SchedulerTrace trace_;
  std::shared_ptr<std::atomic<int64_t>> live_requests_;
  Mailbox<Message> mailbox_;

  Entries waiting_;     // FIFO, bounded by max_waiting
  Entries prefilling_;  // admitted, their prompts prefilled chunk by chunk over the next rounds
  Entries running_;     // have their first token, in the batch
  // Chooses every row's K; fed each round's outcome.
  KPlanner planner_;
  RoundTiming round_timing_;        // of the round now being applied (trace)
  std::vector<int32_t> planned_k_;  // of the round now being applied, per running row
  bool batch_drafting_ = true;      // the last round drafted for some row (or K is not planned)
  bool room_short_ = false;         // CacheManager found no room: nobody is admitted until a request ends
  static constexpr size_t kRecentRounds = 15;
  std::deque<double> recent_rounds_;  // seconds of the last rounds without newcomers (prefill_budget)
  EngineSnapshot counters_;           // the monotonic counters part
  int64_t delivered_tokens_ = 0;      // to requests so far, first tokens included (trace)
  bool stopping_ = false;
  Clock::time_point stop_deadline_;
  std::vector<Reply<std::monostate>> stop_replies_;
};

}  // namespace specd::actors
