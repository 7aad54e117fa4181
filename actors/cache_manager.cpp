#include "actors/cache_manager.hpp"

#include "engine/base/errors.hpp"

namespace specd::actors {

CacheManager::CacheManager(asio::any_io_executor strand, int32_t slots, bool has_draft,
                           std::shared_ptr<KvLedger> target)
    : strand_(strand), mailbox_(strand, 1024), target_slots_(slots), target_(std::move(target)) {
  if (!target_ || target_->slot_count() != slots) {
    throw SpecdError(ErrorCode::invalid_argument, "CacheManager: the target ledger must have one slot per KV slot");
  }
  if (has_draft) draft_slots_.emplace(slots);
}

awaitable<void> CacheManager::run() {
  for (;;) {
    auto next = co_await receive<Message>(mailbox_);
    if (!next) co_return;
    Message& message = *next;
    if (auto* stop = std::get_if<Stop>(&message)) {
      stop->reply.set({});
      co_return;
    }
    std::visit(
        [this](auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (!std::is_same_v<T, Stop> && !std::is_same_v<T, std::monostate>) handle(m);
        },
        message);
  }
}

void CacheManager::handle(Acquire& m) {
  const bool drafted = m.needs_draft && draft_slots_;
  if (target_slots_.free_count() == 0 || (drafted && draft_slots_->free_count() == 0)) {
    m.reply.set(std::nullopt);
    return;
  }
  SlotGrant grant;
  grant.target_slot = *target_slots_.allocate();
  if (drafted) grant.draft_slot = *draft_slots_->allocate();
  m.reply.set(grant);
}

void CacheManager::handle(Release& m) {
  target_->release(m.grant.target_slot);
  target_slots_.release(m.grant.target_slot);
  if (m.grant.draft_slot >= 0) draft_slots_->release(m.grant.draft_slot);
  m.reply.set({});
}

void CacheManager::handle(Usage& m) {
  m.reply.set({target_slots_.in_use_count(), draft_slots_ ? draft_slots_->in_use_count() : 0, target_slots_.size(),
               target_->total_blocks() - target_->available_blocks()});
}

void CacheManager::handle(MapPrefixes& m) {
  specd::map_prefixes(*target_, *m.chunks);
  m.reply.set({});
}

void CacheManager::handle(LayOut& m) {
  LaidOut out;
  try {
    out.layout = lay_out_pass(*target_, *m.drafts, *m.chunks);
  } catch (const SpecdError& e) {
    out.no_room = e.message();
  }
  m.reply.set(std::move(out));
}

void CacheManager::handle(Keep& m) {
  keep_pass(*target_, *m.layout, *m.drafts, *m.paths, *m.chunks);
  m.reply.set({});
}

void CacheManager::handle(Drop& m) {
  drop_pass(*target_, *m.layout);
  m.reply.set({});
}

awaitable<std::optional<SlotGrant>> CacheManager::acquire(bool needs_draft) {
  return ask<std::optional<SlotGrant>>(mailbox_, [needs_draft](auto reply) { return Acquire{needs_draft, reply}; });
}

awaitable<void> CacheManager::release(SlotGrant grant) {
  co_await ask<std::monostate>(mailbox_, [grant](auto reply) { return Release{grant, reply}; });
}

awaitable<CacheUsage> CacheManager::usage() {
  return ask<CacheUsage>(mailbox_, [](auto reply) { return Usage{reply}; });
}

awaitable<void> CacheManager::map_prefixes(std::vector<TargetPrefill>& chunks) {
  if (chunks.empty()) co_return;
  co_await ask<std::monostate>(mailbox_, [&chunks](auto reply) { return MapPrefixes{&chunks, reply}; });
}

awaitable<LaidOut> CacheManager::lay_out(RoundDrafts& drafts, const std::vector<TargetPrefill>& chunks) {
  return ask<LaidOut>(mailbox_, [&drafts, &chunks](auto reply) { return LayOut{&drafts, &chunks, reply}; });
}

awaitable<void> CacheManager::keep(const PassLayout& layout, const RoundDrafts& drafts,
                                   const std::vector<std::vector<int32_t>>& paths,
                                   const std::vector<TargetPrefill>& chunks) {
  co_await ask<std::monostate>(mailbox_, [&layout, &drafts, &paths, &chunks](auto reply) {
    return Keep{&layout, &drafts, &paths, &chunks, reply};
  });
}

awaitable<void> CacheManager::drop(const PassLayout& layout) {
  co_await ask<std::monostate>(mailbox_, [&layout](auto reply) { return Drop{&layout, reply}; });
}

awaitable<void> CacheManager::stop() {
  co_await ask<std::monostate>(mailbox_, [](auto reply) { return Stop{reply}; });
}

}  // namespace specd::actors
