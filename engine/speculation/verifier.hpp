#pragma once
// Verifier: the target side of the rounds. Owns the target model and its KV cache:
// prefills newcomers' prompts (sampling their first tokens) and runs each round's one
// batched verify pass [B, K+1] with accept/reject, truncating the target cache to what
// was kept. Touched by one thread (the target lane).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvCache;
class LlamaModel;

// A newcomer's prompt for the target prefill, by value.
struct TargetPrefill {
  int32_t target_slot;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  Rng rng{0};
};

// The first token sampled after a prompt, and the request's stream after drawing it.
struct FirstToken {
  int32_t token = 0;
  Rng rng{0};
};

class Verifier {
 public:
  Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache);
  ~Verifier();
  Verifier(Verifier&&) noexcept;

  // One batched pass over each prompt into its (emptied) slot; the first tokens, in
  // order. Afterwards the slot holds the prompt: every token of the context but g.
  std::vector<FirstToken> prefill(std::span<TargetPrefill> prompts);
  // The round's one target pass, accept/reject per row, and the cache truncation.
  // Throws SpecdError(out_of_capacity) for a row with no room left in the cache.
  RoundResult verify(RoundDrafts& drafts);

  LlamaModel& model() { return *model_; }
  KvCache& cache() { return *cache_; }

 private:
  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<KvCache> cache_;
};

}  // namespace specd
