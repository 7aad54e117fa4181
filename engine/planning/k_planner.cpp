#include "engine/planning/k_planner.hpp"

#include <algorithm>

#include "engine/base/errors.hpp"

namespace specd {

KPlanner::KPlanner(KPlanSetup setup)
    : k_max_(setup.sequence.k_max), max_seq_len_(setup.sequence.max_seq_len), has_draft_model_(setup.has_draft_model) {
  if (k_max_ < 0) throw SpecdError(ErrorCode::invalid_argument, "k_max must be >= 0");
  meter_.rounds = std::move(setup.round_costs);
}

RequestK KPlanner::start(const SpecSettings& spec, bool has_draft_slot) const {
  const bool model_drafter = spec.drafter == DrafterKind::model;
  const bool drafts = spec.enabled && (!model_drafter || (has_draft_model_ && has_draft_slot));
  const int32_t bound = spec.k_max > 0 ? std::min(spec.k_max, k_max_) : k_max_;
  AdaptiveK adaptive_k(meter_.cost_ratio(), bound, kDefaultProbeEvery, meter_.acceptance.estimate(spec.drafter));
  if (spec.tree.mode == TreeMode::fixed) {  // the shape's depth, every round
    return RequestK(drafts, spec.drafter, false, std::min(static_cast<int32_t>(spec.tree.widths.size()), k_max_),
                    adaptive_k, false, TreeGain());
  }
  return RequestK(drafts, spec.drafter, spec.adaptive, spec.adaptive ? bound : std::min(spec.k, k_max_), adaptive_k,
                  spec.tree.mode == TreeMode::automatic, TreeGain(meter_.tree_gain.estimate(spec.drafter)));
}

KPlan KPlanner::plan(std::span<const RunningRequest> rows) {
  const double c = meter_.cost_ratio();
  for (const RunningRequest& row : rows) {
    RequestK& r = *row.request;
    r.adaptive_k_.set_cost_ratio(c);
    r.adaptive_k_.set_pooled_acceptance(meter_.acceptance.estimate(r.drafter_));
  }
  std::vector<int32_t> planned(rows.size(), -1);
  KPlan out;
  if (meter_.rounds) out.batch = plan_batch(rows, planned);
  for (size_t i = 0; i < rows.size(); ++i) out.k.push_back(row_k(rows[i], planned[i]));
  plan_trees(rows, out);
  return out;
}

void KPlanner::plan_trees(std::span<const RunningRequest> rows, KPlan& plan) const {
  plan.trees.assign(rows.size(), TreeShape{});
  TreePricing pricing;
  double tokens = 0;
  int32_t deepest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t k = plan.k[i];
    pricing.verify_rows += k + 1;
    if (k > 0 && rows[i].request->drafter_ == DrafterKind::model) ++pricing.draft_rows;
    deepest = std::max(deepest, k);
    tokens += expected_round_tokens(rows[i].request->acceptance(), k);
  }
  if (meter_.rounds && meter_.rounds->verify_ready()) {
    const RoundCostModel& c = *meter_.rounds;
    pricing.costs = &c;
    double seconds = c.verify_seconds(pricing.verify_rows) + c.overhead_seconds(pricing.draft_rows > 0);
    if (pricing.draft_rows > 0 && c.draft_ready()) seconds += deepest * c.draft_step_seconds(pricing.draft_rows);
    pricing.seconds_per_token = tokens > 0 ? seconds / tokens : 0;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    RequestK& r = *rows[i].request;
    if (!r.auto_tree_ || plan.k[i] < 1) continue;
    TreeShape shape = choose_auto_tree(plan.k[i], r.drafter_, r.tree_gain_.estimate(), false, pricing);
    if (shape.chain() && r.tree_gain_.skipped()) shape = choose_auto_tree(plan.k[i], r.drafter_, 0, true, pricing);
    plan.trees[i] = std::move(shape);
  }
}

void KPlanner::observe(std::span<const KOutcome> rows, const RoundCosts& costs, double round_seconds) {
  for (const KOutcome& row : rows) {
    if (row.drafted == 0) continue;
    row.request->adaptive_k_.observe(row.drafted, row.accepted);
    if (row.beyond_first_path >= 0) {
      row.request->tree_gain_.observe(row.beyond_first_path);
      meter_.tree_gain.observe(row.request->drafter_, row.beyond_first_path);
    }
    meter_.acceptance.observe(row.request->drafter_, row.drafted, row.accepted);
  }
  meter_.observe(costs, round_seconds);
}

int64_t KPlanner::room(const RunningRequest& row) const {
  return std::min<int64_t>(max_seq_len_ - row.context, int64_t{row.max_new} - 1);
}

int32_t KPlanner::row_k(const RunningRequest& row, int32_t planned) const {
  RequestK& r = *row.request;
  if (!r.drafts_) return 0;
  int64_t k = planned >= 0 ? planned : r.adaptive_ ? r.adaptive_k_.next_k() : r.k_;
  k = std::min(k, room(row));
  return static_cast<int32_t>(std::max<int64_t>(k, 0));
}

std::optional<BatchPlan> KPlanner::plan_batch(std::span<const RunningRequest> rows,
                                              std::vector<int32_t>& planned) const {
  const RoundCostModel& costs = *meter_.rounds;
  if (!costs.verify_ready()) return std::nullopt;
  std::vector<PricedRow> plan_rows;
  int32_t k_max = 0;  // the largest cap this round: the planner searches no further
  bool needs_draft_curve = false;
  for (const RunningRequest& row : rows) {
    const RequestK& r = *row.request;
    PricedRow p;
    p.acceptance = r.acceptance();
    p.draft_model = r.drafter_ == DrafterKind::model;
    p.draft_lag = p.draft_model ? row.draft_lag : 0;
    if (r.drafts_ && r.adaptive_) {
      // Lookup rows too: their drafts cost no draft steps, but each widens the verify
      // pass, which on a busy batch costs more than the drafts are expected to return.
      p.plannable = true;
      p.k_cap = static_cast<int32_t>(std::max<int64_t>(std::min<int64_t>(r.k_, room(row)), 0));
      k_max = std::max(k_max, p.k_cap);
      needs_draft_curve |= p.draft_model && p.k_cap > 0;
    } else if (r.drafts_) {
      p.fixed_k = r.k_;  // an upper bound for lookup rows, which may find fewer
      needs_draft_curve |= p.draft_model && p.fixed_k > 0;
    }
    plan_rows.push_back(p);
  }
  if (needs_draft_curve && !costs.draft_ready()) return std::nullopt;
  BatchPlan plan = plan_batch_k(plan_rows, costs, k_max, {kRefreshUndraftedAfter});
  for (size_t i = 0; i < rows.size(); ++i) {
    if (plan_rows[i].plannable) planned[i] = plan.k[i];
  }
  return plan;
}

}  // namespace specd
