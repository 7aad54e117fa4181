#include "actors/model_lanes.hpp"

#include <algorithm>

namespace specd::actors {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

awaitable<LaneSpan> ModelLanes::prefill_draft(std::vector<DraftPrefill>& prompts, const DraftPrefillLayout& layout) {
  LaneSpan lane;
  if (prompts.empty()) co_return lane;
  auto job = [&prompts, &layout, &lane](Drafter& d) {
    lane.start = Clock::now();
    d.prefill(prompts, layout);
    lane.end = Clock::now();
  };
  co_await draft_.run("draft prefill", job);
  co_return lane;
}

awaitable<RoundDrafts> ModelLanes::propose(RoundPlan& plan, const ProposalLayout& layout) {
  if (plan.rows.empty()) co_return RoundDrafts{};
  auto job = [&plan, &layout](Drafter& d) { return d.propose(plan, layout); };
  co_return co_await draft_.run("draft", job);
}

awaitable<TargetPassOutcome> ModelLanes::target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& chunks,
                                                     const PassLayout& layout) {
  TargetPassOutcome out;
  if (drafts.rows.empty() && chunks.empty()) co_return out;
  auto job = [&drafts, &chunks, &layout, &out](Verifier& v) {
    const auto start = Clock::now();
    TargetPassResult pass = v.pass(drafts, chunks, layout);
    out.round = std::move(pass.round);
    out.prefills.first_tokens = std::move(pass.first_tokens);
    out.paths = std::move(pass.paths);
    if (!chunks.empty()) out.prefills.lane = {start, Clock::now()};
  };
  // The slice's name says what the pass carried.
  const char* label = chunks.empty() ? "verify" : drafts.rows.empty() ? "target prefill" : "verify + prefill";
  co_await verify_.run(label, job);
  co_return out;
}

}  // namespace specd::actors
