#include "actors/cache_manager.hpp"

namespace specd::actors {

CacheManager::CacheManager(asio::any_io_executor strand, int32_t slots, bool has_draft)
    : strand_(strand), mailbox_(strand, 1024), target_slots_(slots) {
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
  target_slots_.release(m.grant.target_slot);
  if (m.grant.draft_slot >= 0) draft_slots_->release(m.grant.draft_slot);
}

void CacheManager::handle(Usage& m) {
  m.reply.set({target_slots_.in_use_count(), draft_slots_ ? draft_slots_->in_use_count() : 0, target_slots_.size()});
}

awaitable<std::optional<SlotGrant>> CacheManager::acquire(bool needs_draft) {
  return ask<std::optional<SlotGrant>>(mailbox_, [needs_draft](auto reply) { return Acquire{needs_draft, reply}; });
}

awaitable<void> CacheManager::release(SlotGrant grant) {
  Message message(Release{grant});
  co_await mailbox_.async_send(error_code{}, std::move(message), asio::use_awaitable);
}

awaitable<CacheUsage> CacheManager::usage() {
  return ask<CacheUsage>(mailbox_, [](auto reply) { return Usage{reply}; });
}

awaitable<void> CacheManager::stop() {
  co_await ask<std::monostate>(mailbox_, [](auto reply) { return Stop{reply}; });
}

}  // namespace specd::actors
