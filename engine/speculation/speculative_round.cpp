#include "engine/speculation/speculative_round.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "engine/planning/batch_k_planner.hpp"
#include "engine/planning/round_cost_model.hpp"

namespace specd {

DraftedRow::DraftedRow() = default;
DraftedRow::~DraftedRow() = default;
DraftedRow::DraftedRow(DraftedRow&&) noexcept = default;
DraftedRow& DraftedRow::operator=(DraftedRow&&) noexcept = default;

SpecSequence::SpecSequence(std::vector<int32_t> context, int32_t target_slot_, int32_t draft_slot_,
                           SamplingParams sampling_, SpecSettings spec_, double cost_ratio, double acceptance_prior)
    : tokens(std::move(context)),
      target_slot(target_slot_),
      draft_slot(draft_slot_),
      sampling(sampling_),
      rng(sampling_.seed),
      spec(spec_),
      adaptive(cost_ratio, spec_.k_max, kDefaultProbeEvery, acceptance_prior) {}

namespace {

bool can_draft(const SpecSequence& seq, const RoundLimits& limits) {
  const bool model_drafter = seq.spec.drafter == DrafterKind::model;
  return seq.spec.enabled && (!model_drafter || (limits.has_draft_model && seq.draft_slot >= 0));
}

// Room for drafts: verify writes g and K drafts after n - 1 tokens, and the drafts never
// run past max_tokens.
int64_t k_room(const SpecSequence& seq, const RoundLimits& limits, int32_t max_new) {
  const auto n = static_cast<int64_t>(seq.tokens.size());
  return std::min<int64_t>(limits.max_seq_len - n, int64_t{max_new} - 1);
}

}  // namespace

int32_t plan_k(SpecSequence& seq, const RoundLimits& limits, int32_t max_new, int32_t planned_k) {
  if (!can_draft(seq, limits)) return 0;
  int64_t k = planned_k >= 0 ? planned_k : seq.spec.adaptive ? seq.adaptive.next_k() : seq.spec.k;
  k = std::min(k, k_room(seq, limits, max_new));
  return static_cast<int32_t>(std::max<int64_t>(k, 0));
}

RowPlan plan_row(const SpecSequence& seq, int32_t k) {
  RowPlan row;
  row.target_slot = seq.target_slot;
  row.draft_slot = seq.draft_slot;
  row.context = seq.tokens;
  row.k = k;
  row.sampling = seq.sampling;
  row.drafter = seq.spec.drafter;
  row.lookup_max_ngram = seq.spec.lookup_max_ngram;
  row.rng = seq.rng;
  return row;
}

RoundDrafts undrafted(RoundPlan& plan) {
  RoundDrafts drafts;
  for (RowPlan& row : plan.rows) {
    drafts.rows.emplace_back();
    drafts.rows.back().plan = std::move(row);
    drafts.rows.back().plan.k = 0;
  }
  return drafts;
}

void apply_output(SpecSequence& seq, const RoundOutput& out) {
  seq.tokens.insert(seq.tokens.end(), out.tokens.begin(), out.tokens.end());
  seq.rng = out.rng;
  // Also fixed-K rows: the batch planner reads it.
  if (out.drafted > 0) seq.adaptive.observe(out.drafted, out.accepted);
}

std::optional<BatchPlan> plan_batch(std::span<SpecSequence* const> batch, std::span<const int32_t> max_new,
                                    const RoundCostModel& costs, const RoundLimits& limits,
                                    std::vector<int32_t>& planned_k) {
  planned_k.assign(batch.size(), -1);
  if (!costs.verify_ready()) return std::nullopt;
  std::vector<PlanRow> rows;
  int32_t k_max = 0;
  bool needs_draft_curve = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SpecSequence& seq = *batch[i];
    PlanRow row;
    const bool model_drafter = seq.spec.drafter == DrafterKind::model;
    row.acceptance = seq.adaptive.acceptance();
    row.draft_model = model_drafter;
    if (can_draft(seq, limits) && seq.spec.adaptive) {
      // Lookup rows too: their drafts cost no draft steps, but each widens the verify
      // pass, which on a busy batch costs more than the drafts are expected to return.
      const int64_t room = std::min<int64_t>(seq.spec.k_max, k_room(seq, limits, max_new[i]));
      row.plannable = true;
      row.k_cap = static_cast<int32_t>(std::max<int64_t>(room, 0));
      k_max = std::max(k_max, row.k_cap);
      needs_draft_curve |= model_drafter && row.k_cap > 0;
    } else if (can_draft(seq, limits)) {
      row.fixed_k = seq.spec.k;  // an upper bound for lookup rows, which may find fewer
      needs_draft_curve |= model_drafter && row.fixed_k > 0;
    }
    rows.push_back(row);
  }
  if (needs_draft_curve && !costs.draft_ready()) return std::nullopt;
  const BatchPlan plan = plan_batch_k(rows, costs, k_max, {kRefreshUndraftedAfter});
  for (size_t i = 0; i < batch.size(); ++i) {
    if (rows[i].plannable) planned_k[i] = plan.k[i];
  }
  return plan;
}

void record_round_costs(RoundCostModel& costs, const RoundResult& round) {
  for (const DraftStepTime& step : round.draft_step_times) costs.observe_draft_step(step.rows, step.seconds);
  if (round.verify_tokens > 0) costs.observe_verify(round.verify_tokens, round.verify_phase_seconds);
}

}  // namespace specd
