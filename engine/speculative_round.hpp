#pragma once
// One speculative round over a batch of sequences (DESIGN.md, "The speculative round"):
// batched draft steps (with lazy draft prefill and catch-up of tokens the draft has
// not seen), one batched target pass of [B, K+1] with per-row positions, accept/reject
// per row, truncation of both caches. Rows may use different K (0 = a plain target
// step) and different drafters. Synchronous and single-threaded: the caller's lane
// drives it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/adaptive_k.hpp"
#include "engine/sampling.hpp"

namespace specd {

class LlamaModel;
class KvCache;

enum class DrafterKind { model, lookup };
const char* drafter_name(DrafterKind kind);

// Per-request speculation settings.
struct SpecSettings {
  bool enabled = true;
  int32_t k = 4;          // drafted tokens per round when not adaptive
  bool adaptive = false;  // `k = auto`: K from the running acceptance and the cost ratio
  int32_t k_max = 8;      // bound for adaptive K
  DrafterKind drafter = DrafterKind::model;
  int32_t lookup_max_ngram = 3;
};

// Per-request statistics (the figures vLLM and llama.cpp report).
struct SpecStats {
  int64_t rounds = 0;    // rounds in which this request drafted at least one token
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t emitted = 0;   // tokens produced by those rounds (accepted + correction/bonus)
  int64_t rejections = 0;  // rounds that ended on a rejected draft token (the rest accepted all)
  std::vector<int64_t> accepted_per_position;  // [i]: rounds whose draft token i+1 was accepted

  // Accepted over drafted, as vLLM reports it (drafts after a rejection count as not accepted).
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  // The per-token acceptance probability a of the speedup formula (Leviathan et al.'s
  // alpha): accepted over the draft tokens the target actually judged (accepted plus
  // the one rejected per round); the maximum-likelihood estimate for truncated rounds.
  double alpha() const {
    return accepted + rejections ? static_cast<double>(accepted) / static_cast<double>(accepted + rejections) : 0.0;
  }
  double tokens_per_round() const { return rounds ? static_cast<double>(emitted) / rounds : 0.0; }
  void record(int32_t drafted_now, int32_t accepted_now);
};

// The two models and their caches. The draft is optional (lookup drafting needs none).
struct SpecModels {
  LlamaModel& target;
  KvCache& target_cache;
  LlamaModel* draft = nullptr;
  KvCache* draft_cache = nullptr;
};

// One request as the round sees it. Invariant between rounds: `tokens` is the whole
// context (prompt + generated) ending with the last sampled token g; the target cache
// holds every token but g; the draft cache holds a prefix of `tokens` (possibly empty).
struct SpecSequence {
  SpecSequence(std::vector<int32_t> context, int32_t target_slot, int32_t draft_slot, SamplingParams sampling,
               SpecSettings spec, double cost_ratio);

  std::vector<int32_t> tokens;
  int32_t target_slot;
  int32_t draft_slot;  // -1 when the request has no draft slot
  SamplingParams sampling;
  Rng rng;
  SpecSettings spec;
  AdaptiveK adaptive;
  SpecStats stats;
  int32_t max_new_this_round = 1 << 30;  // caller's cap on emitted tokens (max_tokens left)
};

// What one row produced in a round: 1..K+1 tokens (accepted drafts, then the
// correction or bonus token), and how many were drafted and accepted.
struct RoundOutput {
  std::vector<int32_t> tokens;
  int32_t drafted = 0;
  int32_t accepted = 0;
};

struct RoundResult {
  std::vector<RoundOutput> rows;  // one per sequence, in batch order
  int32_t draft_steps = 0;        // batched draft forward calls (0 when no row drafted with the model)
  double draft_seconds = 0;
  double verify_seconds = 0;      // the one batched target pass
};

// Runs one round for every sequence; appends the emitted tokens to each sequence's
// `tokens` and returns them. Rows with no room left in the target cache must not be
// passed (the caller finishes them with finish reason length).
RoundResult speculative_round(SpecModels& models, std::span<SpecSequence* const> batch);

// The K a row will use this round: settings, adaptive choice, drafter availability,
// room left in the caches and in max_tokens.
int32_t plan_k(const SpecModels& models, SpecSequence& seq);

}  // namespace specd
