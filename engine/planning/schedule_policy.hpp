#pragma once
// The scheduler's decisions as plain functions of plain values, so each is tested alone
// (tests/schedule_policy_test.cpp): how many KV blocks a request holds, whether a waiting
// request may join, how a round's prefill budget is shared out, and whom to preempt when
// the next round does not fit. actors/scheduler_actor.cpp calls them.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/planning/kv_budget.hpp"

namespace specd {

// A request's KV footprint as the scheduler counts it, in positions of each model's cache.
struct KvFootprint {
  int64_t context = 0;     // decoding: its tokens, the last sampled one (g) included
  int64_t to_prefill = 0;  // waiting or prefilling: the tokens its prefill writes
  bool decoding = false;   // has its first token: its rounds verify up to k_max drafts
};

// Positions a request holds once its next decode round has run: g and up to k_max drafts
// after the cache's context, or, before its first token, after its prefill and first token.
// Admission reserves this much, so a request admitted is never short of its first round.
int64_t reserved_positions(const KvFootprint& r, int32_t k_max);
// Positions a request's cache reaches in the round about to run: its verify rows when
// decoding, its prefill otherwise. The next round fits when these fit.
int64_t round_positions(const KvFootprint& r, int32_t k_max);

// Whether a request wanting `wanted` blocks may join those holding `in_use` in pools of
// `pool_blocks` each (0: unbounded).
bool admits(int64_t in_use, int64_t wanted, int32_t pool_blocks);

// The round's prompt tokens shared out first come, first served: per prefilling request,
// in order, the tokens it prefills this round, stopping at the first that gets none.
// `remaining`: each request's prompt tokens not yet in its cache.
std::vector<int64_t> share_prefill(int64_t budget, std::span<const int64_t> remaining);

// Whom to preempt so that the next round fits: the youngest (admitted last; of equal
// times, the later one), or nothing when the round fits or one request is left (one
// request alone always fits: the engine refuses a pool smaller than max_seq_len).
// `admitted`: each request's admission time, in the order the scheduler lists them;
// `need`: the blocks the round needs with all of them.
std::optional<size_t> preemption_victim(std::span<const int64_t> admitted, int64_t need, int32_t pool_blocks);
// The youngest of `admitted` as above, whatever the need; nothing when one is left.
std::optional<size_t> youngest_of_several(std::span<const int64_t> admitted);

}  // namespace specd
