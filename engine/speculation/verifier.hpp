#pragma once
// Verifier: the target side of the rounds. Owns the target model and its KV storage
// (the blocks' contents; which block is whose is the KvLedger's, engine/model/kv_ledger).
// A round's one target pass carries the running rows' verify rows [g, t1..tK] (accept/
// reject) and newcomers' prompt chunks (their first tokens sampled when a chunk
// completes a prompt): one read of the weights for both. Touched by one thread (the
// target lane).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/speculation/pass_layout.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvBlockPool;
class KvLedger;
class LlamaModel;

// The first token sampled after a prompt, and the request's stream after drawing it.
struct FirstToken {
  int32_t token = 0;
  Rng rng{0};
  std::vector<TokenLogprobs> logprobs;  // the token's, when the request asks
};

// What a round's target pass gave: a row per drafted row, a first token per chunk that
// completed its prompt (and samples), in order, and per drafted row the nodes of its
// accepted path (keep_pass keeps their KV).
struct TargetPassResult {
  RoundResult round;
  std::vector<FirstToken> first_tokens;
  std::vector<std::vector<int32_t>> paths;
};

class Verifier {
 public:
  Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvBlockPool> storage);
  ~Verifier();
  Verifier(Verifier&&) noexcept;

  // The round's one target pass: every drafted row's verify rows and every chunk, in the
  // blocks `layout` gives them (lay_out_pass). A row's logits depend only on its slot's
  // cache and position, so a prompt in chunks gives what it gives whole, and a verify
  // row what it gives alone. The ledger's owner then applies the result (keep_pass).
  TargetPassResult pass(RoundDrafts& drafts, std::span<const TargetPrefill> chunks, const PassLayout& layout);
  // The same where one thread owns the ledger too (tests, tools): first chunks map their
  // cached prefixes, the rows get their blocks, the pass runs and its result is kept. A
  // pass of prompts only, and one of verify rows only.
  std::vector<FirstToken> prefill(KvLedger& ledger, std::span<TargetPrefill> prompts);
  RoundResult verify(KvLedger& ledger, RoundDrafts& drafts);

  LlamaModel& model() { return *model_; }
  const std::shared_ptr<KvBlockPool>& storage() { return storage_; }

 private:
  TargetPassResult pass_on(KvLedger& ledger, RoundDrafts& drafts, std::span<TargetPrefill> chunks);

  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<KvBlockPool> storage_;
};

}  // namespace specd
