#pragma once
// Test drivers of the engine's parts without the actors:
// - generate_target_only: one request, one model step per token. The independent
//   reference that speculative decoding must reproduce exactly (greedy) or in
//   distribution (sampling).
// - generate_speculative: a batch of requests through the round's parts (Drafter,
//   Verifier, plan/apply) directly, for the round's losslessness across K, batch mixes
//   and prompt lengths on in-memory models (the Engine needs checkpoint directories and
//   a tokenizer).
// Programs run requests through the Engine (actors/engine.hpp); these exist for tests.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/finish_reason.hpp"
#include "engine/sampling/sampling.hpp"
#include "engine/speculation/drafter.hpp"
#include "engine/speculation/speculative_round.hpp"
#include "engine/speculation/verifier.hpp"

namespace specd {

class LlamaModel;
class KvCache;

// The two models and their caches as a test holds them (the draft is optional). The
// drivers lend them to a Drafter and a Verifier for the length of one call.
struct SpecModels {
  LlamaModel& target;
  KvCache& target_cache;
  LlamaModel* draft = nullptr;
  KvCache* draft_cache = nullptr;
};

// A Drafter and a Verifier over borrowed models and caches (the caller keeps them alive).
Drafter borrow_drafter(SpecModels& models);
Verifier borrow_verifier(SpecModels& models);

// One round for every sequence, as the scheduler runs it: K from the planner (max_tokens
// unbounded), draft, verify, apply, and the outcome back to the planner. Returns the
// round's result.
RoundResult speculative_round(KPlanner& planner, Drafter& drafter, Verifier& verifier, SpecModels& models,
                              std::span<SpecSequence* const> batch);

// A request as generate_speculative runs it: the prompt as ids, and the EOS ids the
// Engine would take from its tokenizer (tests choose their own).
struct DriverRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<int32_t> eos_ids;
  std::vector<std::string> stop;  // needs a tokenizer
  SpecSettings spec;
  // With `tree: auto`, the extra nodes of every round's tree, instead of what the
  // planner reads off measured timings: pins the shapes a statistical test samples.
  std::optional<int32_t> auto_tree_extra;
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // structured output; null: free text
};

// The speculation settings that exactness tests run one batch under, variant by
// variant: 0 off, 1 K = 1, 2 K = 4, 3 a fixed tree 2,2,1 (K 4), 4 K = 4 with rows
// alternating the draft model and prompt lookup (`row`: the request's place in the batch).
inline constexpr int kExactnessSpecs = 5;
inline SpecSettings exactness_spec(int variant, size_t row) {
  SpecSettings spec;
  spec.enabled = variant > 0;
  spec.k = variant == 1 ? 1 : 4;
  if (variant == 3) spec.tree = {TreeMode::fixed, {2, 2, 1}};
  if (variant == 4) spec.drafter = row % 2 ? DrafterKind::lookup : DrafterKind::model;
  return spec;
}

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included if the model wants it
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<int32_t> eos_ids;  // generation stops after emitting one (it is kept in tokens)
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // structured output; null: free text
};

struct GenerationResult {
  std::vector<int32_t> tokens;          // generated ids, not including the prompt
  std::vector<TokenLogprobs> logprobs;  // per token, when sampling.logprobs >= 0
  FinishReason finish_reason = FinishReason::length;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // from the first generated token to the last
};

// Called after each generated token; return false to stop early.
using TokenCallback = std::function<bool(int32_t token)>;

// Logits (one row) masked by hand to what `state` allows: a float32 copy, disallowed ids
// at -inf; nothing when it allows none. The references' own masking, not the round's code.
std::optional<at::Tensor> masked_by_hand(const at::Tensor& logits, grammar::GrammarMatcher& state);

// Runs on slot 0 of `cache`. A prompt that does
// not fit the cache is SpecdError(out_of_capacity); generation that reaches
// max_seq_len ends with finish_reason length.
GenerationResult generate_target_only(LlamaModel& model, KvCache& cache, const GenerationRequest& request,
                                      const TokenCallback& on_token = {});

struct SpecResult {
  std::vector<int32_t> tokens;          // generated ids (an EOS that stopped generation is kept)
  std::vector<TokenLogprobs> logprobs;  // per token, when sampling.logprobs >= 0
  std::string text;                     // decoded text, cut before a stop string (empty without tokenizer)
  FinishReason finish_reason = FinishReason::length;
  SpecStats stats;
  int64_t draft_steps = 0;  // the draft model's calls in the rounds it drafted in (a batched call counts for each row)
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

class Tokenizer;

// Runs all requests together (a finished request leaves the batch, its slots are
// released), K planned per request (no calibrated round costs) within an engine bound
// that admits every request's K. Stop conditions (EOS ids, stop strings, max_tokens, a
// full cache) are RequestOutput's, applied to accepted tokens only, in order. Throws
// SpecdError for a request that cannot fit or when slots run out.
std::vector<SpecResult> generate_speculative(SpecModels& models, const std::vector<DriverRequest>& requests,
                                             const Tokenizer* tokenizer);

}  // namespace specd
