// Tests for engine/planning/k_planner: which rows draft, fixed K capped by the caches' room and
// max_tokens, the engine's k_max bounding every request once, adaptive K reading the
// measured cost ratio and the drafter's recent acceptance, and the batch plan (lookup
// rows planned from the verify curve alone; no plan while a curve it needs is missing).
#include "engine/planning/k_planner.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "engine/base/errors.hpp"

using namespace specd;

namespace {

SpecSettings fixed(int32_t k, DrafterKind drafter = DrafterKind::model) {
  SpecSettings s;
  s.k = k;
  s.drafter = drafter;
  return s;
}

SpecSettings adaptive(int32_t k_max = 8, DrafterKind drafter = DrafterKind::model) {
  SpecSettings s;
  s.adaptive = true;
  s.k_max = k_max;
  s.drafter = drafter;
  return s;
}

// The one row's K this round.
int32_t plan_one(KPlanner& planner, RequestK& request, int64_t context = 10, int32_t max_new = 100) {
  const RunningRequest row{&request, context, max_new};
  return planner.plan(std::span(&row, 1)).k.front();
}

// Costs of a round with one draft step of `step` seconds and a verify pass of `verify`.
RoundCosts one_step(double step, double verify) {
  RoundCosts costs;
  costs.draft_steps = 1;
  costs.draft_seconds = step;
  costs.verify_seconds = verify;
  return costs;
}

}  // namespace

TEST_CASE("fixed K is capped by the caches' room and max_tokens; rows that cannot draft get 0") {
  KPlanner planner({.sequence = {.max_seq_len = 64, .k_max = 8}, .has_draft_model = true});
  RequestK four = planner.start(fixed(4), true);
  CHECK(plan_one(planner, four) == 4);
  CHECK(plan_one(planner, four, 62) == 2);  // verify writes g and K drafts after 61 tokens
  CHECK(plan_one(planner, four, 64) == 0);
  CHECK(plan_one(planner, four, 10, 3) == 2);  // never past max_tokens: 2 drafts and the bonus
  CHECK(plan_one(planner, four, 10, 1) == 0);

  RequestK no_slot = planner.start(fixed(4), false);
  CHECK(plan_one(planner, no_slot) == 0);
  SpecSettings off = fixed(4);
  off.enabled = false;
  RequestK disabled = planner.start(off, true);
  CHECK(plan_one(planner, disabled) == 0);

  // Without a draft model only prompt lookup drafts: it needs no slot.
  KPlanner target_only({.sequence = {.max_seq_len = 64, .k_max = 8}, .has_draft_model = false});
  RequestK model = target_only.start(fixed(4), true);
  RequestK lookup = target_only.start(fixed(4, DrafterKind::lookup), false);
  CHECK(plan_one(target_only, model) == 0);
  CHECK(plan_one(target_only, lookup) == 4);
}

TEST_CASE("the engine's k_max bounds every request; a request's own bound below it is kept") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 5}, .has_draft_model = true});
  RequestK big_fixed = planner.start(fixed(8), true);
  CHECK(plan_one(planner, big_fixed) == 5);
  // A draft that is always accepted: the recent acceptance, where new requests start, nears 1.
  RequestK good = planner.start(fixed(4), true);
  for (int i = 0; i < 400; ++i) {
    const KOutcome all{&good, 4, 4};
    planner.observe(std::span(&all, 1), one_step(0.001, 0.01));
  }
  RequestK wide = planner.start(adaptive(16), true);
  CHECK(wide.acceptance() > 0.95);
  CHECK(plan_one(planner, wide) == 5);  // best_k at that acceptance and c = 0.1 is 15 or 16
  RequestK own = planner.start(adaptive(3), true);
  CHECK(plan_one(planner, own) == 3);
  CHECK(planner.k_max() == 5);
  CHECK_THROWS_AS(KPlanner({.sequence = {.k_max = -1}}), SpecdError);
}

TEST_CASE("adaptive K uses the measured cost ratio, 0.1 until it is measured") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 8}, .has_draft_model = true});
  RequestK request = planner.start(adaptive(), true);
  CHECK(request.acceptance() == doctest::Approx(kDefaultAcceptancePrior));
  CHECK(planner.measured_cost_ratio() == 0);
  CHECK(plan_one(planner, request) == 4);  // best_k(0.7, 0.1, 8)
  planner.observe({}, one_step(0.005, 0.01));
  CHECK(planner.measured_cost_ratio() == doctest::Approx(0.5));
  CHECK(plan_one(planner, request) == 1);  // best_k(0.7, 0.5, 8)
}

TEST_CASE("every row that drafted feeds its own estimate and its drafter's recent acceptance") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 8}, .has_draft_model = false});
  RequestK lookup = planner.start(fixed(4, DrafterKind::lookup), false);
  const KOutcome rejected{&lookup, 4, 0};
  planner.observe(std::span(&rejected, 1), {});
  // Prior 0.7 of weight 4, decay 0.9: 2.52 successes against 1.08 + 1 failures.
  CHECK(lookup.acceptance() == doctest::Approx(2.52 / 4.6));
  const KOutcome undrafted{&lookup, 0, 0};
  planner.observe(std::span(&undrafted, 1), {});
  CHECK(lookup.acceptance() == doctest::Approx(2.52 / 4.6));
  for (int i = 0; i < 300; ++i) planner.observe(std::span(&rejected, 1), {});
  // New lookup requests start from what lookup rows accepted; model rows are apart.
  RequestK next_lookup = planner.start(adaptive(8, DrafterKind::lookup), false);
  CHECK(next_lookup.acceptance() < 0.05);
  CHECK(plan_one(planner, next_lookup) == 0);
  RequestK model = planner.start(adaptive(8, DrafterKind::model), false);
  CHECK(model.acceptance() == doctest::Approx(kDefaultAcceptancePrior));
}

TEST_CASE("a request plans with its own short window shrunk toward its drafter's pooled acceptance") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 8}, .has_draft_model = true});
  const RoundCosts prices = one_step(0.075, 0.207);  // the padded pair's: c = 0.36
  const double c = 0.075 / 0.207;
  // Other requests' rows accepted 4 of 4 drafts 500 times and 3 of 4 drafts 100 times.
  RequestK others = planner.start(adaptive(), true);
  for (int i = 0; i < 600; ++i) {
    const KOutcome row{&others, 4, i % 6 == 0 ? 3 : 4};
    planner.observe(std::span(&row, 1), prices);
  }
  // A new request meets three unlucky rounds: one draft, rejected.
  RequestK request = planner.start(adaptive(), true);
  const double pooled = request.acceptance();  // it starts at the pool's estimate
  CHECK(pooled > 0.9);
  const KOutcome rejected{&request, 1, 0};
  for (int i = 0; i < 3; ++i) planner.observe(std::span(&rejected, 1), prices);
  double successes = 4 * pooled, failures = 4 * (1 - pooled);  // the seed: weight 4, decay 0.9
  for (int i = 0; i < 3; ++i) {
    successes *= 0.9;
    failures = 0.9 * failures + 1;
  }
  const double own = successes / (successes + failures);
  CHECK(request.acceptance() == doctest::Approx(own));  // no plan yet: no pool set
  const int32_t k = plan_one(planner, request);
  const double shrunk = request.acceptance();
  CHECK(shrunk > own + 0.2);
  // The pool has taken in the three rejected rows as well: within 1% of where it started.
  CHECK(shrunk == doctest::Approx((successes + kPooledAcceptanceWeight * pooled) /
                                  (successes + failures + kPooledAcceptanceWeight))
                      .epsilon(0.01));
  CHECK(k == best_k(shrunk, c, 8));
  CHECK(k > best_k(own, c, 8));  // its own three rounds alone would have planned shorter
}

TEST_CASE("the batch plan plans adaptive lookup rows from the verify curve alone") {
  // verify(T) = base + per_token * T; no draft-step curve is ever measured.
  auto verify_only = [](double base, double per_token) {
    RoundCostModel costs(4, 8);
    for (int32_t t = 1; t <= 36; ++t) costs.observe_verify(t, base + per_token * t);
    return costs;
  };
  const SpecSettings lookup = adaptive(8, DrafterKind::lookup);

  // Rows whose drafts were all accepted once: acceptance 6.52 / 7.6, about 0.86.
  auto accepted_once = [](KPlanner& planner, RequestK& x, RequestK& y) {
    const std::vector<KOutcome> all{{&x, 4, 4}, {&y, 4, 4}};
    planner.observe(all, {});
  };

  // A flat verify pass: lookup drafts are free, so both rows take the whole K.
  KPlanner flat(
      {.sequence = {.max_seq_len = 128, .k_max = 8}, .has_draft_model = false, .round_costs = verify_only(1e-3, 0.0)});
  RequestK a = flat.start(lookup, false);
  RequestK b = flat.start(lookup, false);
  accepted_once(flat, a, b);
  CHECK(a.acceptance() == doctest::Approx(6.52 / 7.6));
  std::vector<RunningRequest> rows{{&a, 5, 100}, {&b, 5, 100}};
  KPlan plan = flat.plan(rows);
  REQUIRE(plan.batch.has_value());
  CHECK(plan.k == std::vector<int32_t>{8, 8});
  rows[0].max_new = 5;
  CHECK(flat.plan(rows).k == std::vector<int32_t>{4, 8});  // never past max_tokens

  // A verify pass proportional to the tokens fed: every draft costs a full token's
  // time and returns less than one, so speculation is off for both.
  KPlanner proportional(
      {.sequence = {.max_seq_len = 128, .k_max = 8}, .has_draft_model = false, .round_costs = verify_only(0.0, 1e-3)});
  RequestK c = proportional.start(lookup, false);
  RequestK d = proportional.start(lookup, false);
  accepted_once(proportional, c, d);
  rows = {{&c, 5, 100}, {&d, 5, 100}};
  plan = proportional.plan(rows);
  REQUIRE(plan.batch.has_value());
  CHECK(plan.k == std::vector<int32_t>{0, 0});

  // An adaptive draft-model row needs the draft-step curve: no batch plan without it,
  // and each row picks its own K: best_k(0.7, 0.1, 8).
  KPlanner mixed(
      {.sequence = {.max_seq_len = 128, .k_max = 8}, .has_draft_model = true, .round_costs = verify_only(1e-3, 0.0)});
  RequestK e = mixed.start(lookup, false);
  RequestK f = mixed.start(adaptive(), true);
  rows = {{&e, 5, 100}, {&f, 3, 100}};
  plan = mixed.plan(rows);
  CHECK_FALSE(plan.batch.has_value());
  CHECK(plan.k == std::vector<int32_t>{4, 4});
}

TEST_CASE("a batch plan keeps fixed rows at their K and caps its rows by the room left") {
  RoundCostModel costs(4, 8);
  for (int32_t t = 1; t <= 36; ++t) costs.observe_verify(t, 1e-3);
  for (int32_t r = 1; r <= 4; ++r) costs.observe_draft_step(r, 1e-5);
  KPlanner planner({.sequence = {.max_seq_len = 64, .k_max = 8}, .has_draft_model = true, .round_costs = costs});
  RequestK fixed_row = planner.start(fixed(3), true);
  RequestK planned = planner.start(adaptive(), true);
  std::vector<RunningRequest> rows{{&fixed_row, 10, 100}, {&planned, 60, 100}};
  const KPlan plan = planner.plan(rows);
  REQUIRE(plan.batch.has_value());
  // Drafts nearly free against a flat verify pass: the adaptive row takes all 4 that fit.
  CHECK(plan.k == std::vector<int32_t>{3, 4});
  CHECK(plan.batch->k == std::vector<int32_t>{3, 4});
}
