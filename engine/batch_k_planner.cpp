#include "engine/batch_k_planner.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace specd {

double expected_round_tokens(double a, int32_t k) {
  if (k <= 0) return 1;
  if (a >= 1) return k + 1;
  return (1 - std::pow(a, k + 1)) / (1 - a);
}

namespace {

// Expected seconds of a round whose rows draft `k` tokens each (`draft_model` marks the
// rows whose drafts take batched draft-model steps; prompt lookup drafts for free).
double round_seconds(const std::vector<int32_t>& k, const std::vector<bool>& draft_model, const RoundCostModel& m) {
  int32_t tokens = 0, steps = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    tokens += k[i] + 1;
    if (draft_model[i]) steps = std::max(steps, k[i]);
  }
  double seconds = m.verify_seconds(tokens) + m.overhead_seconds();
  for (int32_t step = 0; step < steps; ++step) {
    int32_t active = 0;
    for (size_t i = 0; i < k.size(); ++i) active += draft_model[i] && k[i] > step;
    seconds += m.draft_step_seconds(active);
  }
  return seconds;
}

}  // namespace

BatchPlan plan_batch_k(std::span<const PlanRow> rows, const RoundCostModel& model, int32_t k_max) {
  const size_t n = rows.size();
  std::vector<size_t> plannable;
  for (size_t i = 0; i < n; ++i) {
    if (rows[i].plannable) plannable.push_back(i);
  }
  std::stable_sort(plannable.begin(), plannable.end(),
                   [&](size_t x, size_t y) { return rows[x].acceptance > rows[y].acceptance; });

  std::vector<int32_t> k(n, 0);
  std::vector<bool> draft_model(n, false);
  double fixed_tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    if (rows[i].plannable) {
      draft_model[i] = true;
    } else {
      k[i] = rows[i].fixed_k;
      draft_model[i] = rows[i].fixed_uses_draft_model;
      fixed_tokens += expected_round_tokens(rows[i].acceptance, rows[i].fixed_k);
    }
  }
  const double undrafted_tokens = fixed_tokens + static_cast<double>(plannable.size());
  BatchPlan best;
  best.k = k;  // everyone plannable at K = 0
  best.expected_tokens = undrafted_tokens;
  best.expected_seconds = round_seconds(k, draft_model, model);
  best.undrafted_seconds = best.expected_seconds;
  double best_rate = best.expected_tokens / best.expected_seconds;
  // Relative margin a plan with more drafting must win by: the curves are measured, not
  // exact, and a marginal gain is not worth the draft lane's work and its contention.
  constexpr double kMargin = 0.02;
  for (int32_t common = 1; common <= k_max; ++common) {
    std::vector<int32_t> trial = k;
    double tokens = undrafted_tokens;
    for (size_t m = 0; m < plannable.size(); ++m) {
      const PlanRow& row = rows[plannable[m]];
      trial[plannable[m]] = std::min(common, row.k_cap);
      tokens += expected_round_tokens(row.acceptance, trial[plannable[m]]) - 1;
      const double seconds = round_seconds(trial, draft_model, model);
      if (tokens / seconds > best_rate * (1 + kMargin)) {
        best_rate = tokens / seconds;
        best.k = trial;
        best.expected_tokens = tokens;
        best.expected_seconds = seconds;
      }
    }
  }
  return best;
}

}  // namespace specd
