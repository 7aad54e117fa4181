// Tests for engine/planning/batch_k_planner: with a flat verify cost the planner picks the K of
// the Leviathan et al. formula (adaptive_k's best_k); under a compute-bound verify cost
// it turns speculation off for a large batch; rows with poor acceptance are left out
// while good rows draft; caps, fixed rows and the expected-yield formula are exact.
#include "engine/planning/batch_k_planner.hpp"

#include <doctest/doctest.h>

#include <vector>

#include "engine/planning/adaptive_k.hpp"

using namespace specd;

namespace {

// verify(T) = base + per_token * T for T in 1..max_tokens; draft step(m) = step_base + step_per_row * m.
RoundCostModel linear_costs(int32_t max_batch, int32_t k_max, double base, double per_token, double step_base,
                            double step_per_row) {
  RoundCostModel m(max_batch, k_max);
  for (int32_t t = 1; t <= max_batch * (k_max + 1); ++t) m.observe_verify(t, base + per_token * t);
  for (int32_t r = 1; r <= max_batch; ++r) m.observe_draft_step(r, step_base + step_per_row * r);
  return m;
}

PricedRow plannable(double acceptance, int32_t cap = 8) {
  PricedRow row;
  row.plannable = true;
  row.acceptance = acceptance;
  row.k_cap = cap;
  return row;
}

}  // namespace

TEST_CASE("expected tokens per round follow (1 - a^(K+1)) / (1 - a)") {
  CHECK(expected_round_tokens(0.5, 0) == doctest::Approx(1.0));
  CHECK(expected_round_tokens(0.5, 2) == doctest::Approx(1.75));
  CHECK(expected_round_tokens(0.8, 4) == doctest::Approx((1 - 0.32768) / 0.2));
  CHECK(expected_round_tokens(1.0, 4) == doctest::Approx(5.0));
  CHECK(expected_round_tokens(0.0, 4) == doctest::Approx(1.0));
}

// The planner takes more drafting only for a gain above 2%, so it may stop below
// best_k where the formula's curve is that flat.
TEST_CASE("one row with a flat verify cost gets the K of the speedup formula, or a smaller one within 2%") {
  for (double a : {0.3, 0.5, 0.7, 0.8, 0.9, 0.95}) {
    for (double c : {0.02, 0.05, 0.1, 0.25, 0.5}) {
      const RoundCostModel costs = linear_costs(1, 8, 1.0, 0.0, c, 0.0);
      const std::vector<PricedRow> rows{plannable(a)};
      const BatchPlan plan = plan_batch_k(rows, costs, 8);
      CAPTURE(a);
      CAPTURE(c);
      const int32_t formula_k = best_k(a, c, 8);
      CHECK(plan.k[0] <= formula_k);
      CHECK(expected_speedup(a, plan.k[0], c) >= expected_speedup(a, formula_k, c) / 1.02);
      CHECK(plan.expected_tokens / plan.expected_seconds == doctest::Approx(expected_speedup(a, plan.k[0], c)));
    }
  }
}

TEST_CASE("a compute-bound verify pass turns speculation off for a full batch") {
  // Each verified token costs as much as a whole one-token pass: drafting cannot pay.
  const RoundCostModel costs = linear_costs(32, 8, 0.0, 1.0, 0.05, 0.001);
  const std::vector<PricedRow> rows(32, plannable(0.8));
  const BatchPlan plan = plan_batch_k(rows, costs, 8);
  for (int32_t k : plan.k) CHECK(k == 0);
  CHECK(plan.expected_tokens == doctest::Approx(32.0));
  CHECK(plan.expected_seconds == doctest::Approx(32.0));
}

TEST_CASE("the same rows draft when the verify pass is weight-bound") {
  const RoundCostModel costs = linear_costs(32, 8, 1.0, 0.001, 0.05, 0.001);
  const std::vector<PricedRow> rows(32, plannable(0.8));
  const BatchPlan plan = plan_batch_k(rows, costs, 8);
  for (int32_t k : plan.k) CHECK(k > 0);
  CHECK(plan.expected_tokens > 32.0 * 2);
}

TEST_CASE("rows with poor acceptance are left out while good rows draft") {
  // Draft steps cost per row, so a row that rarely keeps a draft only slows the round.
  const RoundCostModel costs = linear_costs(8, 8, 1.0, 0.01, 0.0, 0.02);
  std::vector<PricedRow> rows;
  for (int i = 0; i < 4; ++i) rows.push_back(plannable(0.9));
  for (int i = 0; i < 4; ++i) rows.push_back(plannable(0.05));
  const BatchPlan plan = plan_batch_k(rows, costs, 8);
  for (int i = 0; i < 4; ++i) CHECK(plan.k[i] > 0);
  for (int i = 4; i < 8; ++i) CHECK(plan.k[i] == 0);
}

TEST_CASE("caps bound a row's K and fixed rows keep theirs") {
  const RoundCostModel costs = linear_costs(4, 8, 1.0, 0.0, 0.01, 0.0);
  PricedRow fixed;
  fixed.fixed_k = 3;
  fixed.acceptance = 0.5;
  PricedRow off;  // speculation disabled: fixed at K = 0
  const std::vector<PricedRow> rows{plannable(0.95, 2), plannable(0.95, 8), fixed, off};
  const BatchPlan plan = plan_batch_k(rows, costs, 8);
  CHECK(plan.k[0] == 2);
  CHECK(plan.k[1] == 8);
  CHECK(plan.k[2] == 3);
  CHECK(plan.k[3] == 0);
}

TEST_CASE("no plannable rows: the plan is the fixed settings, priced") {
  const RoundCostModel costs = linear_costs(2, 4, 1.0, 0.5, 0.1, 0.0);
  PricedRow fixed;
  fixed.fixed_k = 2;
  fixed.acceptance = 0.5;
  const std::vector<PricedRow> rows{fixed, PricedRow{}};
  const BatchPlan plan = plan_batch_k(rows, costs, 4);
  CHECK(plan.k == std::vector<int32_t>{2, 0});
  CHECK(plan.expected_tokens == doctest::Approx(1.75 + 1.0));
  CHECK(plan.expected_seconds == doctest::Approx(1.0 + 0.5 * 4 + 2 * 0.1));
}

TEST_CASE("a drafting plan runs undrafted once the undrafted pass's price has gone stale") {
  // 4 rows at acceptance 0.9 over a weight-bound verify pass: drafting pays.
  RoundCostModel costs = linear_costs(4, 8, 1.0, 0.001, 0.05, 0.001);
  const std::vector<PricedRow> rows(4, plannable(0.9));
  const BatchPlan fresh_prices = plan_batch_k(rows, costs, 8);
  REQUIRE(fresh_prices.k[0] > 0);
  CHECK_FALSE(fresh_prices.refresh);

  // linear_costs fed widths 1..36 in order: the 4-token price is 32 passes old.
  const BatchPlan stale = plan_batch_k(rows, costs, 8, {10});
  CHECK(stale.refresh);
  CHECK(stale.k == std::vector<int32_t>(4, 0));
  CHECK(stale.expected_tokens == doctest::Approx(4.0));
  CHECK(stale.expected_seconds == doctest::Approx(stale.undrafted_seconds));

  costs.observe_verify(4, 1.004);  // the undrafted round ran: its price is current
  CHECK(costs.verify_staleness(4) == 0);
  CHECK(plan_batch_k(rows, costs, 8, {10}).k == fresh_prices.k);

  for (int i = 0; i < 10; ++i) costs.observe_verify(24, 1.024);  // drafting rounds only
  CHECK(plan_batch_k(rows, costs, 8, {10}).k == fresh_prices.k);
  costs.observe_verify(24, 1.024);
  CHECK(plan_batch_k(rows, costs, 8, {10}).refresh);
}

TEST_CASE("a stale undrafted price measured on a slow minute is replaced before the plan drafts on it again") {
  // Drafting pays at 4 rows only while the undrafted pass costs 1.3 (a slow minute).
  RoundCostModel costs(4, 8);
  for (int32_t t = 1; t <= 36; ++t) costs.observe_verify(t, t == 4 ? 1.3 : 1.0 + 0.08 * t);
  for (int32_t r = 1; r <= 4; ++r) costs.observe_draft_step(r, 0.1);
  for (int i = 0; i < 8; ++i) costs.observe_verify(4, 1.3);
  const std::vector<PricedRow> rows(4, plannable(0.5));
  const PlanOptions options{kRefreshUndraftedAfter};
  REQUIRE(plan_batch_k(rows, costs, 8, options).k[0] > 0);
  for (int64_t i = 0; i <= kRefreshUndraftedAfter; ++i) costs.observe_verify(8, 1.64);  // drafting rounds only
  BatchPlan plan = plan_batch_k(rows, costs, 8, options);
  CHECK(plan.refresh);
  CHECK(plan.k == std::vector<int32_t>(4, 0));
  // The host is fast again: each undrafted round costs 1.0. One measurement does not
  // outvote nine old ones, so the plan keeps measuring until three have replaced them.
  costs.observe_verify(4, 1.0);
  CHECK(costs.verify_settling(4));
  CHECK(plan_batch_k(rows, costs, 8, options).refresh);
  costs.observe_verify(4, 1.0);
  CHECK(plan_batch_k(rows, costs, 8, options).refresh);
  costs.observe_verify(4, 1.0);
  CHECK_FALSE(costs.verify_settling(4));
  plan = plan_batch_k(rows, costs, 8, options);
  CHECK_FALSE(plan.refresh);
  CHECK(plan.k == std::vector<int32_t>(4, 0));  // at its true price drafting does not pay
  CHECK(plan.expected_seconds == doctest::Approx(1.0));
}

TEST_CASE("a row whose draft cache lags after undrafted rounds pays its catch-up in the first draft step") {
  // Draft steps cost 0.05 + 0.05 a token fed; verify 1.0 + 0.001 a token: drafting pays
  // for rows in step, not for a row that must first feed 60 missed tokens.
  const RoundCostModel costs = linear_costs(64, 8, 1.0, 0.001, 0.05, 0.05);
  PricedRow in_step = plannable(0.8), lagging = plannable(0.8);
  lagging.draft_lag = 60;
  const BatchPlan caught_up = plan_batch_k(std::vector<PricedRow>{in_step}, costs, 8);
  CHECK(caught_up.k[0] > 0);
  const BatchPlan behind = plan_batch_k(std::vector<PricedRow>{lagging}, costs, 8);
  CHECK(behind.k[0] == 0);
  CHECK(behind.expected_seconds == doctest::Approx(1.001));
  // Priced exactly: K = 1 costs verify(2) + one step over 3 tokens.
  lagging.draft_lag = 2;
  const BatchPlan near = plan_batch_k(std::vector<PricedRow>{lagging}, costs, 1);
  REQUIRE(near.k[0] == 1);
  CHECK(near.expected_seconds == doctest::Approx(1.002 + 0.05 + 0.05 * 3));
}
