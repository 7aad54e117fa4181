#pragma once
// Verifier: the target side of the rounds. Owns the target model and its KV cache. A
// round's one target pass carries the running rows' verify rows [g, t1..tK] (accept/
// reject, the cache truncated to what was kept) and newcomers' prompt chunks (their
// first tokens sampled when a chunk completes a prompt): one read of the weights for
// both. Touched by one thread (the target lane).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvCache;
class LlamaModel;

// A newcomer's prompt for the target prefill, by value: prompt[start, end) goes into its
// slot after the `start` tokens already there (earlier chunks). The first chunk
// (start 0) first maps the longest cached prefix of the prompt into the emptied slot and
// moves the chunk past it, keeping its width: the prefill sets `cached`, `start` and
// `end` to what it did. The first token is sampled by the chunk that reaches the prompt's
// end, unless `sample` is off (a preempted request resuming: its next token is known).
struct TargetPrefill {
  int32_t target_slot;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  Rng rng{0};
  int64_t start = 0;
  int64_t end = -1;  // -1: the prompt's end
  bool sample = true;
  bool use_prefix_cache = true;                    // the request's cache_prompt
  int64_t cached = 0;                              // set by the prefill: prompt tokens the prefix cache held
  std::optional<grammar::GrammarMatcher> grammar;  // structured output: masks the first token
  int64_t chunk_end() const { return end < 0 ? static_cast<int64_t>(prompt.size()) : end; }
  bool completes() const { return chunk_end() == static_cast<int64_t>(prompt.size()); }
};

// The first token sampled after a prompt, and the request's stream after drawing it.
struct FirstToken {
  int32_t token = 0;
  Rng rng{0};
  std::vector<TokenLogprobs> logprobs;  // the token's, when the request asks
};

// What a round's target pass gave: a row per drafted row, a first token per chunk that
// completed its prompt (and samples), in order.
struct TargetPassResult {
  RoundResult round;
  std::vector<FirstToken> first_tokens;
};

class Verifier {
 public:
  Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache);
  ~Verifier();
  Verifier(Verifier&&) noexcept;

  // Before a pass with first chunks (start 0): each one's slot is emptied and maps the
  // longest cached prefix of its prompt; the chunk moves past it, keeping its width.
  // Separate from the pass so the draft side learns where the chunks went first.
  void map_prefixes(std::span<TargetPrefill> chunks);
  // The round's one target pass: every drafted row's verify rows and every chunk, after
  // map_prefixes. A row's logits depend only on its slot's cache and position, so a
  // prompt in chunks gives what it gives whole, and a verify row what it gives alone.
  // Afterwards a completed slot holds the prompt: every token of the context but g.
  // Throws SpecdError(out_of_capacity) for a row with no room left in the cache. Every
  // chunk's full blocks and the tokens each row kept are committed to the prefix cache.
  TargetPassResult pass(RoundDrafts& drafts, std::span<TargetPrefill> chunks);
  // A pass of prompts only, and one of verify rows only.
  std::vector<FirstToken> prefill(std::span<TargetPrefill> prompts);
  RoundResult verify(RoundDrafts& drafts);
  // The slot's request has ended: its blocks go back to the pool (committed ones stay
  // cached until evicted).
  void release(int32_t target_slot);

  LlamaModel& model() { return *model_; }
  KvCache& cache() { return *cache_; }

 private:
  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<KvCache> cache_;
};

}  // namespace specd
