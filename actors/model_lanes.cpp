#include "actors/model_lanes.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>

namespace specd::actors {

namespace {
using namespace boost::asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
}  // namespace

awaitable<void> ModelLanes::map_prefixes(std::vector<TargetPrefill>& chunks) {
  if (std::none_of(chunks.begin(), chunks.end(), [](const TargetPrefill& p) { return p.start == 0; })) co_return;
  auto job = [&chunks](Verifier& v) { v.map_prefixes(chunks); };
  co_await verify_.run("map prefixes", job);
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

awaitable<TargetPassOutcome> ModelLanes::target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& chunks) {
  TargetPassOutcome out;
  if (drafts.rows.empty() && chunks.empty()) co_return out;
  auto job = [&drafts, &chunks, &out](Verifier& v) {
    const auto start = Clock::now();
    TargetPassResult pass = v.pass(drafts, chunks);
    out.round = std::move(pass.round);
    out.prefills.first_tokens = std::move(pass.first_tokens);
    if (!chunks.empty()) out.prefills.lane = {start, Clock::now()};
  };
  // The slice's name says what the pass carried.
  const char* label = chunks.empty() ? "verify" : drafts.rows.empty() ? "target prefill" : "verify + prefill";
  co_await verify_.run(label, job);
  co_return out;
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
