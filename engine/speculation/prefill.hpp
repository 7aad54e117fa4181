#pragma once
// Prompt prefill for both models, as separate calls so that a runtime can put the
// target's and the draft's on different lanes and overlap them with other work.
#include <cstdint>
#include <span>
#include <vector>

namespace specd {

class KvCache;
class LlamaModel;
struct SpecSequence;

// One batched target pass over each sequence's whole context (its prompt) into its
// target slot, which starts empty; samples the first token from the last position's
// logits and appends it, establishing the round invariant (the cache holds every token
// but the last). Returns the first tokens, in order.
std::vector<int32_t> prefill_target(LlamaModel& target, KvCache& cache, std::span<SpecSequence* const> seqs);

// One prompt for the draft's prefill. The prompt is passed separately from the
// sequence, which the target lane may be extending at the same time.
struct DraftPrefill {
  int32_t draft_slot;
  std::span<const int32_t> prompt;
};

// One batched draft pass writing each prompt into its (empty) draft slot, so that the
// first draft step of the sequence feeds only the tokens generated since.
void prefill_draft(LlamaModel& draft, KvCache& cache, std::span<const DraftPrefill> prompts);

}  // namespace specd
