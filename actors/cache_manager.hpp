#pragma once
// CacheManager: the one owner of the KV bookkeeping of both models. It grants each
// admitted request one target KV slot and, when it drafts with the draft model, one
// draft slot, from admission to retirement, and keeps each model's KvLedger (free list,
// reference counts, prefix hash chains and LRU, every slot's and branch's block table,
// what each draft slot was fed). Each round the scheduler asks it three times: before
// the round (newcomers map their cached prefixes; the draft rows get their slots cut and
// blocks for K levels), before the passes (the draft's proposal is kept; every verify
// row, prompt chunk and draft prefill gets its blocks) and after them (each row keeps
// its accepted path; what was written is committed). The lanes get the block tables as
// values and keep only the storage. A released request's blocks are back in the same
// step. Lives on its strand.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/reply.hpp"
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
  struct Acquire {
    bool needs_draft;
    Reply<std::optional<SlotGrant>> reply;
  };
  struct Release {
    SlotGrant grant;
    Reply<std::monostate> reply;
  };
  struct Usage {
    Reply<CacheUsage> reply;
  };
  // One step of a round's KV work (the public round functions below build it).
  struct Work {
    std::function<void()> step;
    Reply<std::exception_ptr> reply;  // null: done
  };
  struct Stop {
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Acquire, Release, Usage, Work, Stop>;

  // `target`, `draft`: each model's ledger with `slots` slots (draft null without a draft
  // model); shared so that metrics read their published block counts from any thread.
  CacheManager(asio::any_io_executor strand, int32_t slots, std::shared_ptr<KvLedger> target,
               std::shared_ptr<KvLedger> draft);

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // Asked from other actors' coroutines.
  awaitable<std::optional<SlotGrant>> acquire(bool needs_draft);  // nullopt: no free slots now
  // The slots go back and their blocks with them (those committed to the prefix cache
  // stay cached until evicted; a draft slot's branches go too).
  awaitable<void> release(SlotGrant grant);
  awaitable<CacheUsage> usage();

  // The round's KV work (engine/speculation/pass_layout.hpp and draft_layout.hpp). Every
  // argument is the asking coroutine's local and must outlive the call. Throws what the
  // ledgers throw (out_of_capacity), each step undoing itself first.
  // Before the round: first chunks map their cached prefixes; the plan's draft-model rows
  // get their slots cut and their blocks.
  awaitable<ProposalLayout> begin_round(std::vector<TargetPrefill>& chunks, const RoundPlan& plan);
  // Before the passes: the proposal's slots keep what they were fed; the target pass and
  // the draft prefill get their blocks.
  awaitable<RoundLayout> lay_out(RoundDrafts& drafts, const ProposalLayout& proposal,
                                 const std::vector<TargetPrefill>& chunks, const std::vector<DraftPrefill>& prompts);
  // After them: each drafted row keeps its accepted path (`paths`), chunks and draft
  // prompts are in their slots, committed.
  awaitable<void> keep(const RoundLayout& layout, const RoundDrafts& drafts,
                       const std::vector<std::vector<int32_t>>& paths, const std::vector<TargetPrefill>& chunks,
                       const std::vector<DraftPrefill>& prompts);
  // A proposal, or the passes, that failed: their blocks and branches go back.
  awaitable<void> drop_proposal(const ProposalLayout& proposal);
  awaitable<void> drop(const RoundLayout& layout, const std::vector<DraftPrefill>& prompts);
  awaitable<void> stop();

 private:
  void handle(Acquire& m);
  void handle(Release& m);
  void handle(Usage& m);
  void handle(Work& m);
  // Runs `step` on the strand; rethrows what it threw.
  awaitable<void> work(std::function<void()> step);

  asio::any_io_executor strand_;
  Mailbox<Message> mailbox_;
  SlotPool target_slots_;
  std::optional<SlotPool> draft_slots_;
  std::shared_ptr<KvLedger> target_, draft_;
};

}  // namespace specd::actors
