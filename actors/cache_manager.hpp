#pragma once
// CacheManager: the one owner of the KV bookkeeping of both models. It grants each
// admitted request one target KV slot and, when it drafts with the draft model, one
// draft slot, from admission to retirement, and keeps each model's KvLedger (free list,
// reference counts, prefix hash chains and LRU, every slot's and branch's block table,
// what each draft slot was fed). Each round the scheduler calls it three times: before
// the round (newcomers map their cached prefixes; the draft rows get their slots cut and
// blocks for K levels), before the passes (the draft's proposal is kept; every verify
// row, prompt chunk and draft prefill gets its blocks) and after them (each row keeps
// its accepted path; what was written is committed). The lanes get the block tables as
// values and keep only the storage. A released request's blocks are back at once.
//
// It runs on the scheduler's strand, called directly: the scheduler is its only caller,
// and as an actor of its own the three asks a round cost the committed pair's
// target-only decode 5% (BENCHMARKS.md, "One owner for the KV cache"). Not thread-safe.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/slot_grant.hpp"
#include "engine/model/kv_ledger.hpp"
#include "engine/model/slot_pool.hpp"
#include "engine/speculation/draft_layout.hpp"
#include "engine/speculation/pass_layout.hpp"

namespace specd::actors {

struct CacheUsage {
  int32_t target_in_use = 0;
  int32_t draft_in_use = 0;
  int32_t slots = 0;
  int32_t target_blocks_referenced = 0, draft_blocks_referenced = 0;
};

// Where a round's passes write: the target pass and the draft prefill beside it.
struct RoundLayout {
  PassLayout pass;
  DraftPrefillLayout draft_prefill;
};

class CacheManager {
 public:
  // `target`, `draft`: each model's ledger with `slots` slots (draft null without a draft
  // model). Throws SpecdError(invalid_argument) for a ledger of another size.
  CacheManager(int32_t slots, std::shared_ptr<KvLedger> target, std::shared_ptr<KvLedger> draft);

  std::optional<SlotGrant> acquire(bool needs_draft);  // nullopt: no free slots now
  // The slots go back and their blocks with them (those committed to the prefix cache
  // stay cached until evicted; a draft slot's branches go too).
  void release(SlotGrant grant);
  CacheUsage usage() const;

  // The round's KV work (engine/speculation/pass_layout.hpp and draft_layout.hpp). Throws
  // what the ledgers throw (out_of_capacity: no room), each step undoing itself first.
  // Before the round: first chunks map their cached prefixes; the plan's draft-model rows
  // get their slots cut and their blocks.
  ProposalLayout begin_round(std::vector<TargetPrefill>& chunks, const RoundPlan& plan);
  // Before the passes: the proposal's slots keep what they were fed; the target pass and
  // the draft prefill get their blocks.
  RoundLayout lay_out(RoundDrafts& drafts, const ProposalLayout& proposal, const std::vector<TargetPrefill>& chunks,
                      const std::vector<DraftPrefill>& prompts);
  // After them: each drafted row keeps its accepted path (`paths`), chunks and draft
  // prompts are in their slots, committed.
  void keep(const RoundLayout& layout, const RoundDrafts& drafts, const std::vector<std::vector<int32_t>>& paths,
            const std::vector<TargetPrefill>& chunks, const std::vector<DraftPrefill>& prompts);
  // A proposal, or the passes, that failed: their blocks and branches go back.
  void drop_proposal(const ProposalLayout& proposal);
  void drop(const RoundLayout& layout, const std::vector<DraftPrefill>& prompts);

 private:
  SlotPool target_slots_;
  std::optional<SlotPool> draft_slots_;
  std::shared_ptr<KvLedger> target_, draft_;
};

}  // namespace specd::actors
