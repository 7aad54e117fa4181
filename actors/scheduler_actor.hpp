#pragma once
// SchedulerActor: admission, continuous batching and K planning, one round at a time.
// Requests wait in a bounded queue until CacheManager grants their KV slots and the
// KV pools have blocks for them, join the
// batch at a round boundary (their target prefill and draft prefill run inside that
// round, on the lanes, overlapping the running batch's draft and verify work), and
// leave it at a round boundary when they finish, are cancelled or fail. It owns each
// request's round state (SpecSequence) and its RequestOutput, which decides on every
// burst, before it leaves, whether the request is finished (EOS, stop strings,
// max_tokens, a full cache): a finished request runs no further round. Rounds go to the
// lanes as values (RoundLanes). Cancels and submissions that arrive during a round are
// applied at the next boundary. When the running requests' next round would need more
// KV blocks than the pools hold, the youngest is preempted: its blocks are dropped and
// it waits at the head of the queue to be prefilled again from its prompt and the tokens
// it already sent (its committed blocks usually still cached), then goes on where it
// was; its client only sees latency. Lives on its strand; its state is touched only by run().
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
#include "engine/request/generate_request.hpp"

namespace specd {
class TraceRecorder;
struct OutputChunk;
class Tokenizer;
}  // namespace specd

namespace specd::actors {

class RequestActor;
using Clock = std::chrono::steady_clock;

// Each model's pool of KV blocks (both hold the same number; engine/model/kv_budget.hpp).
struct KvBlocks {
  int32_t blocks = 0;  // 0: no bound (scheduler tests)
  int32_t block_size = 16;
};

struct SchedulerOptions {
  int32_t max_waiting = 256;
  bool overlap = true;
  bool has_draft = false;
  int64_t max_seq_len = 1024;
  const Tokenizer* tokenizer = nullptr;  // for stop strings and burst text (null: ids only)
  std::vector<int32_t> eos_ids;          // end a request unless it asks to ignore EOS
  int64_t prefill_chunk = 0;             // most prompt tokens prefilled per round (0: no bound)
  // While requests decode, a round carrying prompt chunks takes at most this times a
  // round without (engine/planning/prefill_budget.hpp); 0: always prefill_chunk.
  double prefill_slowdown = 0;
  // The engine's bound on K and, when calibrated (engine/speculation/cost_calibration.hpp),
  // the round costs: K is then planned for the batch as a whole each round; without them,
  // per request.
  KPlanSetup planning;
  KvBlocks kv;
};

class SchedulerActor {
 public:
  struct Submit {
    std::shared_ptr<RequestActor> actor;
    GenerateRequest request;      // as the caller sent it, validated
    std::vector<int32_t> prompt;  // its input as token ids
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
  struct Entry;  // a request waiting or in the batch
  struct RoundOutcome;

  awaitable<void> collect_messages();
  awaitable<void> handle(Message& message);
  awaitable<void> accept(Submit& submit);
  awaitable<void> admit();
  // KV accounting, in blocks of each model's pool: a request's slots hold at most its
  // tokens plus a round's drafts. Shared prefix blocks count once per request, so the
  // pools never run out however requests share.
  int64_t prefill_length(const Entry& e) const;
  int64_t blocks_reserved(const Entry& e) const;
  int64_t blocks_in_use() const;
  // Preempts the youngest requests until the next round fits the pools.
  awaitable<void> preempt_to_fit();
  awaitable<void> preempt(Entry& entry);
  awaitable<void> run_round();
  // The running rows' plan, with the K the planner chose for each.
  RoundPlan plan_round(std::optional<BatchPlan>& batch_plan);
  awaitable<RoundOutcome> execute(RoundPlan& plan);
  // Prompt tokens the round's pass carries beside the plan's verify rows.
  int64_t prefill_budget(const RoundPlan& plan) const;
  // Applies the round's outputs and the newcomers' first tokens; finishes who ended.
  awaitable<void> apply_round(RoundOutcome& outcome, double seconds);
  awaitable<void> start_prefilled(RoundOutcome& outcome);
  // Passes a burst through the entry's output and on to its actor; true when the
  // entry has finished (a stop condition, or a sink too slow for its bursts).
  // `planned_k`: the K planned for the row this round; -1 for a newcomer's first token.
  // `tree_nodes`: the nodes of the row's tree (0: a chain).
  bool deliver(Entry& entry, std::span<const int32_t> tokens, int32_t drafted, int32_t accepted, int32_t planned_k = -1,
               int32_t tree_nodes = 0);
  // Coroutine arguments here are references, pointers or trivially destructible values:
  // no temporary with a destructor is left in a co_await expression (compilers have
  // destroyed such temporaries twice; see CMakeLists.txt).
  awaitable<void> finish(Entry& entry, FinishReason ended_by, const RequestError* failure = nullptr);
  // Finishes and removes every entry of `entries` that `which` selects.
  template <class Which>
  awaitable<void> finish_where(std::vector<std::unique_ptr<Entry>>& entries, const Which& which, FinishReason reason,
                               const RequestError* error = nullptr);
  // Once stopping: ends the waiting requests now and, past the deadline, the rest.
  awaitable<void> end_for_stop();
  void count_drafts(int32_t drafted, int32_t accepted);
  // Adds a decode round of `rows` rows to the snapshot's plain or drafting tallies.
  void tally_round(size_t rows, bool drafted, double seconds, int64_t delivered);
  void trace_round(const RoundOutcome& outcome, int64_t delivered, const std::optional<BatchPlan>& plan);
  bool idle() const;
  // The median seconds of the last rounds without newcomers (0: none yet).
  double recent_round_seconds() const;
  // The lanes free the KV blocks of slots released since the last call (ended or
  // preempted requests), in one job per lane.
  awaitable<void> return_released_blocks();
  void post(Message message);

  asio::any_io_executor strand_;
  SchedulerOptions options_;
  CacheManager& cache_;
  RoundLanes& lanes_;
  SchedulerTrace trace_;
  std::shared_ptr<std::atomic<int64_t>> live_requests_;
  Mailbox<Message> mailbox_;

  std::vector<std::unique_ptr<Entry>> waiting_;  // FIFO, bounded by max_waiting
  std::vector<std::unique_ptr<Entry>> fresh_;    // admitted, prefilled in the next round
  std::vector<std::unique_ptr<Entry>> running_;  // prefilled, in the batch
  // Chooses every row's K; fed each round's outcome.
  KPlanner planner_;
  RoundTiming round_timing_;        // of the round now being applied (trace)
  std::vector<int32_t> planned_k_;  // of the round now being applied, per running row
  bool batch_drafting_ = true;      // the last round drafted for some row (or K is not planned)
  static constexpr size_t kRecentRounds = 15;
  std::deque<double> recent_rounds_;  // seconds of the last rounds without newcomers (prefill_budget)
  std::vector<SlotGrant> released_;   // slots whose lane blocks go back before the next round
  EngineSnapshot counters_;           // the monotonic counters part
  int64_t delivered_tokens_ = 0;      // to requests so far, first tokens included (trace)
  bool stopping_ = false;
  Clock::time_point stop_deadline_;
  std::vector<Reply<std::monostate>> stop_replies_;
};

}  // namespace specd::actors
