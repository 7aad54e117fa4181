#pragma once
// Drafter: the draft side of the rounds. Owns the draft model and its KV storage (both
// absent when only prompt lookup drafts); which block is whose, and what each slot
// holds, is the draft KvLedger's (engine/speculation/draft_layout.hpp), kept by its
// owner around each job. Touched by one thread (the draft lane).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculation/draft_layout.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvBlockPool;
class KvLedger;
class LlamaModel;

class Drafter {
 public:
  Drafter(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvBlockPool> storage);
  ~Drafter();
  Drafter(Drafter&&) noexcept;

  // Drafts for every row of the plan: a tree (a chain is one) of depth K for the rows
  // `layout` gives a draft slot, grown level by level in one batched pass per level (the
  // first feeds what the slot lacks: the whole context for a newcomer, the emitted
  // tokens otherwise; each expanded node then runs in a branch holding its path, one of
  // the layout's spare branches when its parent's is taken), n-gram lookup for lookup
  // rows, nothing for K = 0. The drafts' `kept` says what each slot and used branch
  // now holds (keep_proposal).
  RoundDrafts propose(RoundPlan& plan, const ProposalLayout& layout);
  // One batched pass writing into each draft slot what it lacks of its prompt[0, end)
  // (layout.keep), in the layout's blocks.
  void prefill(std::span<const DraftPrefill> prompts, const DraftPrefillLayout& layout);
  // The same where one thread owns the ledger too (tests, tools): laid out, run and kept.
  // `ledger` is null without a draft model.
  RoundDrafts propose(KvLedger* ledger, RoundPlan& plan);
  void prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts);

  bool has_model() const { return model_ != nullptr; }
  LlamaModel* model() { return model_.get(); }
  const std::shared_ptr<KvBlockPool>& storage() { return storage_; }

 private:
  struct Growth;
  int32_t run_steps(std::vector<DraftedRow*>& rows, const ProposalLayout& layout, std::vector<DraftStepTime>& times,
                    std::vector<DraftKept>& kept);

  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<KvBlockPool> storage_;
};

}  // namespace specd
