#include "engine/planning/batch_k_planner.hpp"

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

// Round time, built up row by row: the verify pass prices the tokens fed, each draft
// step the rows still drafting at that step. Adding a row is O(its K) and pricing is
// O(the longest K), so the planner's search costs O(k_max^2 * rows) curve lookups, not
// O(k_max^2 * rows^2): at 32 rows the quadratic form took a measurable share of a round.
struct RoundShape {
  int32_t tokens = 0;                // fed to the verify pass: sum of K + 1
  std::vector<int32_t> active_rows;  // per draft step: rows with a draft-model K beyond it
  int32_t catch_up = 0;              // tokens the first draft step feeds beyond one a row

  explicit RoundShape(int32_t k_max) : active_rows(static_cast<size_t>(std::max(k_max, 0)), 0) {}

  void add(int32_t k, bool draft_model, int32_t draft_lag = 0) {
    tokens += k + 1;
    if (!draft_model || k == 0) return;
    if (static_cast<size_t>(k) > active_rows.size()) active_rows.resize(static_cast<size_t>(k), 0);
    for (int32_t step = 0; step < k; ++step) active_rows[static_cast<size_t>(step)] += 1;
    catch_up += draft_lag;
  }

  // A draft step is priced by the tokens it feeds: one a row, and the catch-up at first.
  double seconds(const RoundCostModel& m) const {
    const bool drafting = !active_rows.empty() && active_rows[0] > 0;
    double total = m.verify_seconds(tokens) + m.overhead_seconds(drafting);
    for (size_t step = 0; step < active_rows.size() && active_rows[step] > 0; ++step) {
      total += m.draft_step_seconds(active_rows[step] + (step == 0 ? catch_up : 0));
    }
    return total;
  }
};

}  // namespace

BatchPlan plan_batch_k(std::span<const PricedRow> rows, const RoundCostModel& model, int32_t k_max,
                       PlanOptions options) {
  const size_t n = rows.size();
  std::vector<size_t> plannable;
  for (size_t i = 0; i < n; ++i) {
    if (rows[i].plannable) plannable.push_back(i);
  }
  std::stable_sort(plannable.begin(), plannable.end(),
                   [&](size_t x, size_t y) { return rows[x].acceptance > rows[y].acceptance; });

  std::vector<int32_t> k(n, 0);
  RoundShape undrafted(k_max);  // fixed rows at their K, plannable rows at K = 0
  double fixed_tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    if (rows[i].plannable) {
      undrafted.add(0, true);
    } else {
      k[i] = rows[i].fixed_k;
      undrafted.add(rows[i].fixed_k, rows[i].draft_model);
      fixed_tokens += expected_round_tokens(rows[i].acceptance, rows[i].fixed_k);
    }
  }
  const double undrafted_tokens = fixed_tokens + static_cast<double>(plannable.size());
  BatchPlan best;
  best.k = k;  // everyone plannable at K = 0
  best.expected_tokens = undrafted_tokens;
  best.expected_seconds = undrafted.seconds(model);
  best.undrafted_seconds = best.expected_seconds;
  double best_rate = best.expected_tokens / best.expected_seconds;
  size_t best_rows = 0;
  int32_t best_common = 0;
  // Relative margin a plan with more drafting must win by: the curves are measured, not
  // exact, and a marginal gain is not worth the draft lane's work and its contention.
  constexpr double kMargin = 0.02;
  for (int32_t common = 1; common <= k_max; ++common) {
    RoundShape shape = undrafted;
    double tokens = undrafted_tokens;
    for (size_t m = 0; m < plannable.size(); ++m) {
      const PricedRow& row = rows[plannable[m]];
      const int32_t row_k = std::min(common, row.k_cap);
      shape.tokens -= 1;  // the row was counted at K = 0
      shape.add(row_k, row.draft_model, row.draft_lag);
      tokens += expected_round_tokens(row.acceptance, row_k) - 1;
      const double seconds = shape.seconds(model);
      if (tokens / seconds > best_rate * (1 + kMargin)) {
        best_rate = tokens / seconds;
        best.expected_tokens = tokens;
        best.expected_seconds = seconds;
        best_rows = m + 1;
        best_common = common;
      }
    }
  }
  const bool stale = options.refresh_after > 0 && (model.verify_staleness(undrafted.tokens) > options.refresh_after ||
                                                   model.verify_settling(undrafted.tokens));
  if (best_rows > 0 && stale) {
    best.expected_tokens = undrafted_tokens;
    best.expected_seconds = best.undrafted_seconds;
    best.refresh = true;
    return best;  // best.k still holds the undrafted plan
  }
  for (size_t m = 0; m < best_rows; ++m) {
    best.k[plannable[m]] = std::min(best_common, rows[plannable[m]].k_cap);
  }
  return best;
}

}  // namespace specd
