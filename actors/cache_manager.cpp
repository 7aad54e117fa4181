#include "actors/cache_manager.hpp"

#include "engine/base/errors.hpp"

namespace specd::actors {

CacheManager::CacheManager(int32_t slots, std::shared_ptr<KvLedger> target, std::shared_ptr<KvLedger> draft)
    : target_slots_(slots), target_(std::move(target)), draft_(std::move(draft)) {
  auto fits = [slots](const std::shared_ptr<KvLedger>& l) { return !l || l->slot_count() == slots; };
  if (!target_ || !fits(target_) || !fits(draft_)) {
    throw SpecdError(ErrorCode::invalid_argument, "CacheManager: each ledger must have one slot per KV slot");
  }
  if (draft_) draft_slots_.emplace(slots);
}

std::optional<SlotGrant> CacheManager::acquire(bool needs_draft) {
  const bool drafted = needs_draft && draft_slots_;
  if (target_slots_.free_count() == 0 || (drafted && draft_slots_->free_count() == 0)) return std::nullopt;
  SlotGrant grant;
  grant.target_slot = *target_slots_.allocate();
  if (drafted) grant.draft_slot = *draft_slots_->allocate();
  return grant;
}

void CacheManager::release(SlotGrant grant) {
  target_->release(grant.target_slot);
  target_slots_.release(grant.target_slot);
  if (grant.draft_slot >= 0) {
    draft_->release(grant.draft_slot);
    draft_slots_->release(grant.draft_slot);
  }
}

CacheUsage CacheManager::usage() const {
  return {target_slots_.in_use_count(), draft_slots_ ? draft_slots_->in_use_count() : 0, target_slots_.size(),
          target_->referenced_blocks(), draft_ ? draft_->referenced_blocks() : 0};
}

ProposalLayout CacheManager::begin_round(std::vector<TargetPrefill>& chunks, const RoundPlan& plan) {
  map_prefixes(*target_, chunks);
  return lay_out_proposal(draft_.get(), plan);
}

RoundLayout CacheManager::lay_out(RoundDrafts& drafts, const ProposalLayout& proposal,
                                  const std::vector<TargetPrefill>& chunks, const std::vector<DraftPrefill>& prompts) {
  keep_proposal(draft_.get(), proposal, drafts.kept);
  RoundLayout layout;
  layout.pass = lay_out_pass(*target_, drafts, chunks);
  if (draft_ && !prompts.empty()) {
    try {
      layout.draft_prefill = lay_out_draft_prefill(*draft_, prompts);
    } catch (...) {
      drop_pass(*target_, layout.pass);
      throw;
    }
  }
  return layout;
}

void CacheManager::keep(const RoundLayout& layout, const RoundDrafts& drafts,
                        const std::vector<std::vector<int32_t>>& paths, const std::vector<TargetPrefill>& chunks,
                        const std::vector<DraftPrefill>& prompts) {
  keep_pass(*target_, layout.pass, drafts, paths, chunks);
  if (draft_) keep_draft_prefill(*draft_, prompts);
}

void CacheManager::drop_proposal(const ProposalLayout& proposal) { specd::drop_proposal(draft_.get(), proposal); }

void CacheManager::drop(const RoundLayout& layout, const std::vector<DraftPrefill>& prompts) {
  drop_pass(*target_, layout.pass);
  if (draft_) drop_draft_prefill(*draft_, prompts, layout.draft_prefill);
}

}  // namespace specd::actors
