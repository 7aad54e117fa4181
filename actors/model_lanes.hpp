#pragma once
// ModelLanes: the rounds on the models. VerifyWorker owns the target model and its KV
// storage on the target lane (CacheManager keeps its ledger); DraftWorker owns the draft
// model (if any) and its cache on the draft lane. Each job is a value handed to the lane that owns what it touches.
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
  awaitable<LaneSpan> prefill_draft(std::vector<DraftPrefill>& prompts) override;
  awaitable<RoundDrafts> propose(RoundPlan& plan) override;
  awaitable<TargetPassOutcome> target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& chunks,
                                           const PassLayout& layout) override;
  awaitable<void> release(std::vector<SlotGrant>& slots) override;

 private:
  DraftWorker& draft_;
  VerifyWorker& verify_;
};

}  // namespace specd::actors
