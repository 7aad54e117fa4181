#pragma once
// Drafter: the draft side of the rounds. Owns the draft model and its KV cache (both
// absent when only prompt lookup drafts) and what each draft slot holds, so the cache
// is cut back to what is still valid without anyone else telling it: before a row
// drafts, its slot keeps the longest prefix of the row's context that it was fed
// (after a round that is the context plus the accepted drafts; after a slot is reused,
// whatever the new context shares with the old). Touched by one thread (the draft lane).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvCache;
class LlamaModel;

// One prompt for the draft's prefill, by value: prompt[0, end) should be in the slot.
struct DraftPrefill {
  int32_t draft_slot;
  std::vector<int32_t> prompt;
  int64_t end = -1;  // -1: the prompt's end
};

class Drafter {
 public:
  Drafter(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache);
  ~Drafter();
  Drafter(Drafter&&) noexcept;

  // Drafts for every row of the plan: a tree (a chain is one) of depth K for draft-model
  // rows, grown level by level in one batched pass per level (the first feeds what the
  // slot lacks: the whole context for a newcomer, the emitted tokens otherwise; each
  // expanded node then runs in a branch of the slot's cache holding its path), n-gram
  // lookup for lookup rows, nothing for K = 0.
  RoundDrafts propose(RoundPlan& plan);
  // One batched pass writing into each draft slot what it lacks of its prompt[0, end):
  // earlier chunks, and a prefix the slot's last request shared, stay.
  // An emptied slot first maps the longest cached prefix; every full block of prompt
  // (or kept context) is committed to the prefix cache.
  void prefill(std::span<const DraftPrefill> prompts);
  // The slot's request has ended: its blocks go back to the pool.
  void release(int32_t draft_slot);

  bool has_model() const { return model_ != nullptr; }
  LlamaModel* model() { return model_.get(); }
  KvCache* cache() { return cache_.get(); }

 private:
  // Cuts the slot back to the longest prefix of `context` it holds (an empty slot maps
  // what the prefix cache holds of it) and commits it; returns its length, at most
  // context.size() - 1.
  int64_t keep_common_prefix(int32_t slot, std::span<const int32_t> context);
  // A slot that drafted a tree holds its first path and has a branch per other path
  // (KvCache::fork): the one that shares most with `context` becomes the slot's, the
  // others are dropped.
  void keep_best_branch(int32_t slot, std::span<const int32_t> context);
  void drop_branches(int32_t slot);
  int32_t fork(int32_t owner, int32_t from);
  int32_t run_steps(std::vector<DraftedRow*>& rows, std::vector<DraftStepTime>& times);

  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<KvCache> cache_;
  std::vector<std::vector<int32_t>> branches_;  // per draft slot, its branches from the last tree
};

}  // namespace specd
