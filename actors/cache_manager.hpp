#pragma once
// CacheManager: grants each admitted request one target KV slot and, when it drafts
// with the draft model, one draft slot, from admission to retirement, and owns the
// target model's KV bookkeeping (its KvLedger: free list, reference counts, prefix
// hash chains and LRU, every slot's and branch's block table). Each round the scheduler
// asks it to map newcomers' cached prefixes, then to lay out the target pass (the
// blocks of every verify row and prompt chunk, as tables handed to the target lane,
// which keeps only the storage), then to keep what the pass accepted. A released
// request's target blocks are back in the same step. The draft model's ledger is still
// kept by the draft lane (engine/speculation/drafter.hpp). Lives on its strand.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/reply.hpp"
#include "actors/slot_grant.hpp"
#include "engine/model/kv_ledger.hpp"
#include "engine/model/slot_pool.hpp"
#include "engine/speculation/pass_layout.hpp"

namespace specd::actors {

struct CacheUsage {
  int32_t target_in_use = 0;
  int32_t draft_in_use = 0;
  int32_t slots = 0;
  int32_t target_blocks_referenced = 0;
};

// A target pass's layout, or why the pool could not hold it.
struct LaidOut {
  PassLayout layout;
  std::string no_room;  // empty: laid out
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
  // The round's target KV work; the pointers are to the asking coroutine's frame.
  struct MapPrefixes {
    std::vector<TargetPrefill>* chunks;
    Reply<std::monostate> reply;
  };
  struct LayOut {
    RoundDrafts* drafts;
    const std::vector<TargetPrefill>* chunks;
    Reply<LaidOut> reply;
  };
  struct Keep {
    const PassLayout* layout;
    const RoundDrafts* drafts;
    const std::vector<std::vector<int32_t>>* paths;  // per drafted row, its accepted nodes
    const std::vector<TargetPrefill>* chunks;
    Reply<std::monostate> reply;
  };
  struct Drop {
    const PassLayout* layout;
    Reply<std::monostate> reply;
  };
  struct Stop {
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Acquire, Release, Usage, MapPrefixes, LayOut, Keep, Drop, Stop>;

  // `target`: the target's ledger, with `slots` slots (shared so that metrics read its
  // published block count from any thread).
  CacheManager(asio::any_io_executor strand, int32_t slots, bool has_draft, std::shared_ptr<KvLedger> target);

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // Asked from other actors' coroutines.
  awaitable<std::optional<SlotGrant>> acquire(bool needs_draft);  // nullopt: no free slots now
  // The slots go back and the target slot's blocks with them (those committed to the
  // prefix cache stay cached until evicted).
  awaitable<void> release(SlotGrant grant);
  awaitable<CacheUsage> usage();
  // map_prefixes, lay_out_pass, keep_pass and drop_pass (engine/speculation/pass_layout.hpp)
  // on the target's ledger. Arguments must outlive the call (the caller's locals do).
  awaitable<void> map_prefixes(std::vector<TargetPrefill>& chunks);
  awaitable<LaidOut> lay_out(RoundDrafts& drafts, const std::vector<TargetPrefill>& chunks);
  awaitable<void> keep(const PassLayout& layout, const RoundDrafts& drafts,
                       const std::vector<std::vector<int32_t>>& paths, const std::vector<TargetPrefill>& chunks);
  awaitable<void> drop(const PassLayout& layout);
  awaitable<void> stop();

 private:
  void handle(Acquire& m);
  void handle(Release& m);
  void handle(Usage& m);
  void handle(MapPrefixes& m);
  void handle(LayOut& m);
  void handle(Keep& m);
  void handle(Drop& m);

  asio::any_io_executor strand_;
  Mailbox<Message> mailbox_;
  SlotPool target_slots_;
  std::optional<SlotPool> draft_slots_;
  std::shared_ptr<KvLedger> target_;
};

}  // namespace specd::actors
