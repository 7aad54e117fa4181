#pragma once
// RoundLanes: what the scheduler asks of the compute lanes in a round, as values in and
// values out, each in the blocks CacheManager laid out: the target lane runs the round's
// one pass (verify rows and prompt chunks together), the draft lane prefills newcomers'
// draft slots and proposes. ModelLanes (model_lanes.hpp) runs them on the
// models; tests give the scheduler scripted fakes. Called from the scheduler's strand;
// arguments are references to the caller's frame (no temporary with a destructor in a
// co_await expression, see scheduler_actor.hpp), and the callee may move from them.
#include <chrono>
#include <cstdint>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "engine/speculation/drafter.hpp"
#include "engine/speculation/verifier.hpp"

namespace specd::actors {

// When a job ran on its lane, as the job saw it (a trace's flows point into it).
struct LaneSpan {
  std::chrono::steady_clock::time_point start, end;
  bool ran() const { return end != std::chrono::steady_clock::time_point{}; }
  std::chrono::steady_clock::time_point middle() const { return start + (end - start) / 2; }
};

struct TargetPrefills {
  std::vector<FirstToken> first_tokens;  // one per chunk that completed its prompt (and samples), in order
  LaneSpan lane;                         // the pass that carried the chunks; not run without chunks
};

struct TargetPassOutcome {
  RoundResult round;  // a row per drafted row
  TargetPrefills prefills;
  std::vector<std::vector<int32_t>> paths;  // per drafted row, its accepted nodes (CacheManager keeps them)
};

class RoundLanes {
 public:
  virtual ~RoundLanes() = default;

  // Draft lane: each prompt into its draft slot, in the layout's blocks (nothing without
  // a draft model).
  virtual awaitable<LaneSpan> prefill_draft(std::vector<DraftPrefill>& prompts, const DraftPrefillLayout& layout) = 0;
  // Draft lane: the drafts of every row of the plan, in the layout's blocks.
  virtual awaitable<RoundDrafts> propose(RoundPlan& plan, const ProposalLayout& layout) = 0;
  // Target lane: one pass over every drafted row's verify rows (accept/reject) and every
  // prompt chunk (first tokens of the prompts it completes), in the layout's blocks.
  virtual awaitable<TargetPassOutcome> target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& chunks,
                                                   const PassLayout& layout) = 0;
};

}  // namespace specd::actors
