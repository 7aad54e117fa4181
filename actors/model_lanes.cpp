#include "actors/model_lanes.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

namespace specd::actors {

namespace {
using namespace boost::asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
}  // namespace

awaitable<TargetPrefills> ModelLanes::prefill_target(std::vector<TargetPrefill>& prompts) {
  TargetPrefills out;
  if (prompts.empty()) co_return out;
  auto job = [&prompts, &out](Verifier& v) {
    out.lane.start = Clock::now();
    out.first_tokens = v.prefill(prompts);
    out.lane.end = Clock::now();
  };
  co_await verify_.run("target prefill", job);
  co_return out;
}

awaitable<LaneSpan> ModelLanes::prefill_draft(std::vector<DraftPrefill>& prompts) {
  LaneSpan lane;
  if (prompts.empty()) co_return lane;
  auto job = [&prompts, &lane](Drafter& d) {
    lane.start = Clock::now();
    d.prefill(prompts);
    lane.end = Clock::now();
  };
  co_await draft_.run("draft prefill", job);
  co_return lane;
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

awaitable<void> ModelLanes::release(std::vector<SlotGrant>& slots) {
  if (slots.empty()) co_return;
  auto target = [&slots](Verifier& v) {
    for (const SlotGrant& g : slots) v.release(g.target_slot);
  };
  auto draft = [&slots](Drafter& d) {
    for (const SlotGrant& g : slots)
      if (g.draft_slot >= 0) d.release(g.draft_slot);
  };
  co_await (verify_.run("release", target) && draft_.run("release", draft));
}

}  // namespace specd::actors
