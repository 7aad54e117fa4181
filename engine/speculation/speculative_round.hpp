#pragma once
// One speculative round over a batch of requests (DESIGN.md, "The speculative round"),
// as values that cross lanes: the scheduler keeps each request's SpecSequence and
// builds a RoundPlan from it; the draft side (drafter.hpp) turns the plan into
// RoundDrafts on the draft lane; the target side (verifier.hpp) verifies them on the
// target lane and returns a RoundResult; the scheduler applies each row's output to
// its sequence. Rows may use different K (0 = a plain target step) and drafters.
// Torch-free: at::Tensor is named only inside DraftedRow, whose special members live
// in the .cpp.
#include <chrono>
#include <cstdint>
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

// One request's state across rounds, kept by one owner (the scheduler, or a test
// driver). Invariant between rounds: `tokens` is the whole context (prompt + generated)
// ending with the last sampled token g; the target cache holds every token but g.
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
};

// What bounds K besides the request: the caches' length and whether a draft model exists.
struct RoundLimits {
  int64_t max_seq_len = 1024;
  bool has_draft_model = false;
};

// One row of a round, by value: everything the lanes need and nothing they keep.
struct RowPlan {
  int32_t target_slot = -1;
  int32_t draft_slot = -1;
  std::vector<int32_t> context;  // the sequence's tokens, ending with g
  int32_t k = 0;                 // drafts wanted (lookup may find fewer)
  SamplingParams sampling;
  DrafterKind drafter = DrafterKind::model;
  int32_t lookup_max_ngram = 3;
  Rng rng{0};  // the request's stream: drafting and verifying draw from it in turn
};

struct RoundPlan {
  std::vector<RowPlan> rows;
};

// One row's proposal: the draft side's output, the verify side's input.
struct DraftedRow {
  DraftedRow();
  ~DraftedRow();
  DraftedRow(DraftedRow&&) noexcept;
  DraftedRow& operator=(DraftedRow&&) noexcept;

  RowPlan plan;                     // plan.k is the number of drafts found
  std::vector<int32_t> drafts;      // t1..tk
  std::vector<at::Tensor> draft_q;  // q1..qk (sampling with the draft model only)
};

// One batched draft forward: how many rows it fed and how long it took.
struct DraftStepTime {
  int32_t rows = 0;
  double seconds = 0;
};

struct RoundDrafts {
  std::vector<DraftedRow> rows;  // in plan order
  int32_t draft_steps = 0;
  double draft_seconds = 0;
  std::vector<DraftStepTime> step_times;
};

// What one row produced: 1..K+1 tokens (accepted drafts, then the correction or bonus
// token), how many were drafted and accepted, and the request's stream after the round.
struct RoundOutput {
  std::vector<int32_t> tokens;
  int32_t drafted = 0;
  int32_t accepted = 0;
  Rng rng{0};
};

struct RoundResult {
  std::vector<RoundOutput> rows;  // in plan order
  int32_t draft_steps = 0;        // batched draft forward calls (0 when no row drafted with the model)
  double draft_seconds = 0;
  double verify_seconds = 0;  // the one batched target pass
  std::vector<DraftStepTime> draft_step_times;
  int32_t verify_tokens = 0;                           // tokens the target pass fed: sum of K+1
  double verify_phase_seconds = 0;                     // the pass plus accept/reject and cache truncation
  std::chrono::steady_clock::time_point verify_start;  // when the verify phase began on its lane (traces)
};

// The K a row will use: `planned_k` (the batch planner's, -1: none), else the request's
// setting or adaptive choice; capped by the caches' room and by `max_new` (max_tokens
// left: never draft past it). 0 when the row cannot draft.
int32_t plan_k(SpecSequence& seq, const RoundLimits& limits, int32_t max_new, int32_t planned_k = -1);
// The row's plan with that K (copies the context and the random stream).
RowPlan plan_row(const SpecSequence& seq, int32_t k);
// A round in which no row drafts: the plan's rows as drafted rows with K = 0, for the
// verify side alone.
RoundDrafts undrafted(RoundPlan& plan);
// Applies a row's output: appends its tokens, takes its random stream, and feeds the
// drafted/accepted counts to adaptive K. (The statistics a client sees are RequestOutput's:
// of the kept tokens.)
void apply_output(SpecSequence& seq, const RoundOutput& out);

class RoundCostModel;
// Chooses K for the whole batch with plan_batch_k (batch_k_planner.hpp): adaptive rows
// (either drafter) are planned together, other rows keep their setting. `planned_k`
// gets one K per row (-1: not planned). Returns the plan (what it expects of the
// round), or nothing and plans nothing while the curves it needs are unmeasured (the
// draft-step curve only for draft-model rows).
std::optional<BatchPlan> plan_batch(std::span<SpecSequence* const> batch, std::span<const int32_t> max_new,
                                    const RoundCostModel& costs, const RoundLimits& limits,
                                    std::vector<int32_t>& planned_k);
// Feeds a finished round's measured verify pass and draft steps into the cost model.
void record_round_costs(RoundCostModel& costs, const RoundResult& round);

}  // namespace specd
