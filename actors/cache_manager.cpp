#include "actors/cache_manager.hpp"

#include "engine/base/errors.hpp"

namespace specd::actors {

CacheManager::CacheManager(asio::any_io_executor strand, int32_t slots, std::shared_ptr<KvLedger> target,
                           std::shared_ptr<KvLedger> draft)
    : strand_(strand),
      mailbox_(strand, 1024),
      target_slots_(slots),
      target_(std::move(target)),
      draft_(std::move(draft)) {
  auto fits = [slots](const std::shared_ptr<KvLedger>& l) { return !l || l->slot_count() == slots; };
  if (!target_ || !fits(target_) || !fits(draft_)) {
    throw SpecdError(ErrorCode::invalid_argument, "CacheManager: each ledger must have one slot per KV slot");
  }
  if (draft_) draft_slots_.emplace(slots);
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
  if (m.grant.draft_slot >= 0) {
    draft_->release(m.grant.draft_slot);
    draft_slots_->release(m.grant.draft_slot);
  }
  m.reply.set({});
}

void CacheManager::handle(Usage& m) {
  auto referenced = [](const std::shared_ptr<KvLedger>& l) {
    return l ? l->total_blocks() - l->available_blocks() : 0;
  };
  m.reply.set({target_slots_.in_use_count(), draft_slots_ ? draft_slots_->in_use_count() : 0, target_slots_.size(),
               referenced(target_), referenced(draft_)});
}

void CacheManager::handle(Work& m) {
  try {
    m.step();
    m.reply.set(nullptr);
  } catch (...) {
    m.reply.set(std::current_exception());
  }
}

awaitable<void> CacheManager::work(std::function<void()> step) {
  std::exception_ptr failed = co_await ask<std::exception_ptr>(mailbox_, [step = std::move(step)](auto reply) mutable {
    return Work{std::move(step), reply};
  });
  if (failed) std::rethrow_exception(failed);
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

awaitable<ProposalLayout> CacheManager::begin_round(std::vector<TargetPrefill>& chunks, const RoundPlan& plan) {
  ProposalLayout proposal;
  co_await work([&] {
    map_prefixes(*target_, chunks);
    proposal = lay_out_proposal(draft_.get(), plan);
  });
  co_return proposal;
}

awaitable<RoundLayout> CacheManager::lay_out(RoundDrafts& drafts, const ProposalLayout& proposal,
                                             const std::vector<TargetPrefill>& chunks,
                                             const std::vector<DraftPrefill>& prompts) {
  RoundLayout layout;
  co_await work([&] {
    keep_proposal(draft_.get(), proposal, drafts.kept);
    layout.pass = lay_out_pass(*target_, drafts, chunks);
    if (draft_ && !prompts.empty()) {
      try {
        layout.draft_prefill = lay_out_draft_prefill(*draft_, prompts);
      } catch (...) {
        drop_pass(*target_, layout.pass);
        throw;
      }
    }
  });
  co_return layout;
}

awaitable<void> CacheManager::keep(const RoundLayout& layout, const RoundDrafts& drafts,
                                   const std::vector<std::vector<int32_t>>& paths,
                                   const std::vector<TargetPrefill>& chunks, const std::vector<DraftPrefill>& prompts) {
  co_await work([&] {
    keep_pass(*target_, layout.pass, drafts, paths, chunks);
    if (draft_) keep_draft_prefill(*draft_, prompts);
  });
}

awaitable<void> CacheManager::drop_proposal(const ProposalLayout& proposal) {
  co_await work([&] { specd::drop_proposal(draft_.get(), proposal); });
}

awaitable<void> CacheManager::drop(const RoundLayout& layout, const std::vector<DraftPrefill>& prompts) {
  co_await work([&] {
    drop_pass(*target_, layout.pass);
    if (draft_) drop_draft_prefill(*draft_, prompts, layout.draft_prefill);
  });
}

awaitable<void> CacheManager::stop() {
  co_await ask<std::monostate>(mailbox_, [](auto reply) { return Stop{reply}; });
}

}  // namespace specd::actors
