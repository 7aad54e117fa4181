#pragma once
// CacheManager: grants each admitted request one target KV slot and, when it drafts
// with the draft model, one draft slot, from admission to retirement. It owns the
// slot bookkeeping only; the cache tensors and lengths belong to the compute lanes
// (each lane is the one thread that touches its model's cache). Lives on its strand.
#include <cstdint>
#include <optional>
#include <variant>

#include "actors/asio_aliases.hpp"
#include "actors/reply.hpp"
#include "actors/slot_grant.hpp"
#include "engine/model/slot_pool.hpp"

namespace specd::actors {

struct CacheUsage {
  int32_t target_in_use = 0;
  int32_t draft_in_use = 0;
  int32_t slots = 0;
};

class CacheManager {
 public:
  struct Acquire {
    bool needs_draft;
    Reply<std::optional<SlotGrant>> reply;
  };
  struct Release {
    SlotGrant grant;
  };
  struct Usage {
    Reply<CacheUsage> reply;
  };
  struct Stop {
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Acquire, Release, Usage, Stop>;

  CacheManager(asio::any_io_executor strand, int32_t slots, bool has_draft);

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // Asked from other actors' coroutines.
  awaitable<std::optional<SlotGrant>> acquire(bool needs_draft);  // nullopt: no free slots now
  awaitable<void> release(SlotGrant grant);
  awaitable<CacheUsage> usage();
  awaitable<void> stop();

 private:
  void handle(Acquire& m);
  void handle(Release& m);
  void handle(Usage& m);

  asio::any_io_executor strand_;
  Mailbox<Message> mailbox_;
  SlotPool target_slots_;
  std::optional<SlotPool> draft_slots_;
};

}  // namespace specd::actors
