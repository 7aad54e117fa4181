#include "actors/model_lanes.hpp"

namespace specd::actors {

awaitable<std::vector<FirstToken>> ModelLanes::prefill_target(std::vector<TargetPrefill>& prompts) {
  if (prompts.empty()) co_return std::vector<FirstToken>{};
  auto job = [&prompts](Verifier& v) { return v.prefill(prompts); };
  co_return co_await verify_.run("target prefill", job);
}

awaitable<void> ModelLanes::prefill_draft(std::vector<DraftPrefill>& prompts) {
  if (prompts.empty()) co_return;
  auto job = [&prompts](Drafter& d) { d.prefill(prompts); };
  co_await draft_.run("draft prefill", job);
}

awaitable<RoundDrafts> ModelLanes::propose(RoundPlan& plan) {
  if (plan.rows.empty()) co_return RoundDrafts{};
  auto job = [&plan](Drafter& d) { return d.propose(plan); };
  co_return co_await draft_.run("draft", job);
}

awaitable<RoundResult> ModelLanes::verify(RoundDrafts& drafts) {
  if (drafts.rows.empty()) co_return RoundResult{};
  auto job = [&drafts](Verifier& v) { return v.verify(drafts); };
  co_return co_await verify_.run("verify", job);
}

}  // namespace specd::actors
