#pragma once
// One speculative round over a batch of sequences (DESIGN.md, "The speculative round"):
// batched draft steps (with lazy draft prefill and catch-up of tokens the draft has
// not seen), one batched target pass of [B, K+1] with per-row positions, accept/reject
// per row, truncation of both caches. Rows may use different K (0 = a plain target
// step) and different drafters. Synchronous and single-threaded: the caller's lane
// drives it.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/base/rng.hpp"
#include "engine/planning/adaptive_k.hpp"
#include "engine/planning/batch_k_planner.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/request/spec_settings.hpp"

namespace at {
class Tensor;
}

namespace specd {

class LlamaModel;
class KvCache;

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
               SpecSettings spec, double cost_ratio, double acceptance_prior = kDefaultAcceptancePrior);

  std::vector<int32_t> tokens;
  int32_t target_slot;
  int32_t draft_slot;  // -1 when the request has no draft slot
  SamplingParams sampling;
  Rng rng;
  SpecSettings spec;
  AdaptiveK adaptive;
  SpecStats stats;
  int32_t max_new_this_round = 1 << 30;  // caller's cap on emitted tokens (max_tokens left)
  // Draft-cache length to cut back to before the next draft step: set by the verify
  // phase, applied by the draft phase, so each cache is touched by one lane only.
  int64_t draft_keep = -1;
  // K chosen for this round by the batch planner (plan_batch); -1: the request's own
  // setting or adaptive choice. Read and cleared by the draft phase.
  int32_t planned_k = -1;
};

// One row's proposal for a round: the draft phase's output, the verify phase's input.
// Its special members are defined where at::Tensor is complete (speculative_round.cpp),
// so the actors that pass it between lanes do not include libtorch.
struct DraftedRow {
  DraftedRow();
  ~DraftedRow();
  DraftedRow(DraftedRow&&) noexcept;
  DraftedRow& operator=(DraftedRow&&) noexcept;

  SpecSequence* seq = nullptr;
  int32_t k = 0;
  std::vector<int32_t> drafts;      // t1..tk
  std::vector<at::Tensor> draft_q;  // q1..qk (sampling with the draft model only)
  std::vector<int32_t> context;     // tokens, then t1..tk (for the repetition penalty)
};

// One batched draft forward: how many rows it fed and how long it took.
struct DraftStepTime {
  int32_t rows = 0;
  double seconds = 0;
};

struct RoundDrafts {
  std::vector<DraftedRow> rows;  // one per sequence, in batch order
  int32_t draft_steps = 0;
  double draft_seconds = 0;
  std::vector<DraftStepTime> step_times;
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
  double verify_seconds = 0;  // the one batched target pass
  std::vector<DraftStepTime> draft_step_times;
  int32_t verify_tokens = 0;        // tokens the target pass fed: sum of K+1
  double verify_phase_seconds = 0;  // the pass plus accept/reject and cache truncation
};

// The round in two phases, for callers that run the draft and the target on different
// lanes: draft_phase touches only the draft model and cache, verify_phase only the
// target's. speculative_round is verify_phase(draft_phase(batch)).
RoundDrafts draft_phase(SpecModels& models, std::span<SpecSequence* const> batch);
RoundResult verify_phase(SpecModels& models, RoundDrafts& drafts);

// Runs one round for every sequence; appends the emitted tokens to each sequence's
// `tokens` and returns them. Rows with no room left in the target cache must not be
// passed (the caller finishes them with finish reason length).
RoundResult speculative_round(SpecModels& models, std::span<SpecSequence* const> batch);

// The K a row will use this round: settings, adaptive choice, drafter availability,
// room left in the caches and in max_tokens.
int32_t plan_k(const SpecModels& models, SpecSequence& seq);

// True when the row will not draft this round whatever the caches hold: speculation
// off, or the batch planner chose K = 0.
inline bool drafts_nothing(const SpecSequence& seq) { return !seq.spec.enabled || seq.planned_k == 0; }

class RoundCostModel;
// Chooses K for the whole batch with plan_batch_k (batch_k_planner.hpp) and stores it
// in each sequence's planned_k: adaptive rows (either drafter) are planned together,
// other rows keep their setting. Caps use max_seq_len and max_new_this_round as plan_k
// does. Returns the plan (what it expects of the round), or nothing and plans nothing
// while the curves it needs are unmeasured (the draft-step curve only for draft-model rows).
std::optional<BatchPlan> plan_batch(std::span<SpecSequence* const> batch, const RoundCostModel& costs,
                                    int64_t max_seq_len, bool has_draft_model);
// Feeds a finished round's measured verify pass and draft steps into the cost model.
void record_round_costs(RoundCostModel& costs, const RoundResult& round);

}  // namespace specd
