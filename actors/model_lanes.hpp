#pragma once
// ModelLanes: the rounds on the models. VerifyWorker owns the target model and its KV
// storage on the target lane, DraftWorker the draft model (if any) and its storage on
// the draft lane; CacheManager keeps both ledgers. Each job is a value handed to the lane that owns what it touches.
#include <memory>

#include "actors/lane_worker.hpp"
#include "actors/round_lanes.hpp"
#include "engine/speculation/drafter.hpp"
#include "engine/speculation/verifier.hpp"

namespace specd::actors {

using DraftWorker = LaneWorker<Drafter>;
using VerifyWorker = LaneWorker<Verifier>;

class ModelLanes : public RoundLanes {
 public:
  ModelLanes(DraftWorker& draft, VerifyWorker& verify) : draft_(draft), verify_(verify) {}

  // Empty inputs are answered without a trip to the lane.
  awaitable<LaneSpan> prefill_draft(std::vector<DraftPrefill>& prompts, const DraftPrefillLayout& layout) override;
  awaitable<RoundDrafts> propose(RoundPlan& plan, const ProposalLayout& layout) override;
  awaitable<TargetPassOutcome> target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& chunks,
                                           const PassLayout& layout) override;

 private:
  DraftWorker& draft_;
  VerifyWorker& verify_;
};

}  // namespace specd::actors
