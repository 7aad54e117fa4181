// Tests for engine/planning/round_cost_model: the cost curve's buckets, interpolation,
// extrapolation and median refit, on exact hand-computed values.
#include "engine/planning/round_cost_model.hpp"

#include <doctest/doctest.h>

using namespace specd;

TEST_CASE("an empty curve has no value and a model without both curves is not ready") {
  CostCurve curve(64);
  CHECK(curve.empty());
  CHECK(curve.at(5) == -1);
  RoundCostModel model(4, 8);
  CHECK_FALSE(model.ready());
  model.observe_verify(5, 0.01);
  CHECK_FALSE(model.ready());
  model.observe_draft_step(2, 0.001);
  CHECK(model.ready());
}

TEST_CASE("measured sizes read back exactly and sizes between them interpolate linearly") {
  CostCurve curve(64);
  curve.observe(4, 4.0);
  curve.observe(8, 6.0);
  CHECK(curve.at(4) == doctest::Approx(4.0));
  CHECK(curve.at(8) == doctest::Approx(6.0));
  CHECK(curve.at(6) == doctest::Approx(5.0));
  CHECK(curve.at(5) == doctest::Approx(4.5));
}

TEST_CASE("a step between neighbouring sizes is kept: 1 to 3 rows cheap, 4 rows dear") {
  CostCurve curve(64);
  for (int32_t size : {1, 2, 3}) curve.observe(size, 1.0);
  curve.observe(4, 3.0);
  CHECK(curve.at(3) == doctest::Approx(1.0));
  CHECK(curve.at(4) == doctest::Approx(3.0));
}

TEST_CASE("below the smallest measurement the curve is flat; above the largest it grows in proportion") {
  CostCurve curve(256);
  curve.observe(8, 2.0);
  curve.observe(16, 3.0);
  CHECK(curve.at(1) == doctest::Approx(2.0));
  CHECK(curve.at(32) == doctest::Approx(6.0));  // 3 * 32 / 16: no cheap pass is assumed unseen
  CostCurve descending(256);
  descending.observe(8, 3.0);
  descending.observe(16, 2.0);
  CHECK(descending.at(64) == doctest::Approx(8.0));
}

TEST_CASE("a bucket holds the median of its last nine passes: one stall does not move it") {
  CostCurve curve(64);
  curve.observe(8, 1.0);
  curve.observe(8, 2.0);
  CHECK(curve.at(8) == doctest::Approx(1.5));  // even count: the mean of the middle two
  curve.observe(8, 1.0);
  CHECK(curve.at(8) == doctest::Approx(1.0));
  curve.observe(8, 40.0);  // a descheduled pass
  CHECK(curve.at(8) == doctest::Approx(1.5));
  curve.observe(8, 1.0);
  CHECK(curve.at(8) == doctest::Approx(1.0));
  for (int i = 0; i < 9; ++i) curve.observe(8, 3.0);  // a lasting change replaces the window
  CHECK(curve.at(8) == doctest::Approx(3.0));
}

TEST_CASE("an observation between buckets stays a point at its own size") {
  CostCurve curve(16);    // buckets 1 2 3 4 6 8 12 16
  curve.observe(5, 1.0);  // nearest bucket on a log scale: 6
  curve.observe(7, 1.0);  // nearest: 8
  CHECK(curve.at(5) == doctest::Approx(1.0));
  CHECK(curve.at(6) == doctest::Approx(1.0));  // flat cost stays flat
  CHECK(curve.at(7) == doctest::Approx(1.0));
  CostCurve small(16);
  small.observe(32, 4.0);  // beyond the range: the last bucket, at size 32
  CHECK(small.at(32) == doctest::Approx(4.0));
  CHECK(small.at(16) == doctest::Approx(4.0));
}

TEST_CASE("observations in one bucket give a point at the median size and median time") {
  CostCurve curve(64);
  curve.observe(8, 1.0);
  curve.observe(9, 2.0);  // same bucket (8): point (8.5, 1.5)
  curve.observe(32, 5.0);
  CHECK(curve.at(8) == doctest::Approx(1.5));  // below the point: flat
  CHECK(curve.at(20) == doctest::Approx(1.5 + (20 - 8.5) * (5.0 - 1.5) / (32 - 8.5)));
}

TEST_CASE("non-finite or negative times are ignored, and the overhead is an exponential average") {
  CostCurve curve(16);
  curve.observe(4, -1.0);
  curve.observe(4, 1.0 / 0.0);
  CHECK(curve.empty());
  RoundCostModel model(4, 4);
  model.observe_overhead(0.001);
  model.observe_overhead(0.002);
  CHECK(model.overhead_seconds() == doctest::Approx(0.0012));
  CHECK(model.overhead_seconds(true) == doctest::Approx(0.0012));  // no drafting round yet
  model.observe_overhead(0.005, true);
  CHECK(model.overhead_seconds(true) == doctest::Approx(0.005));
  CHECK(model.overhead_seconds() == doctest::Approx(0.0012));
}

TEST_CASE("staleness counts the observations since a size's bucket was last fed") {
  CostCurve curve(64);
  CHECK(curve.staleness(8) == 1);  // never fed: more than every observation so far
  curve.observe(8, 1.0);
  CHECK(curve.staleness(8) == 0);
  curve.observe(32, 2.0);
  curve.observe(33, 2.0);  // the same bucket as 32
  CHECK(curve.staleness(8) == 2);
  CHECK(curve.staleness(32) == 0);
  CHECK(curve.staleness(2) == 4);  // never fed, after 3 observations
  curve.observe(8, 1.0);
  CHECK(curve.staleness(8) == 0);
  CHECK(curve.staleness(32) == 1);
}

TEST_CASE("a bucket fed after going stale keeps its old samples until three new ones replace them") {
  CostCurve curve(64, 10);
  for (int i = 0; i < 9; ++i) curve.observe(4, 2.0);  // measured while the host was slow
  for (int i = 0; i < 10; ++i) curve.observe(32, 5.0);
  curve.observe(4, 40.0);  // 10 observations old: not yet stale, an ordinary stall
  CHECK_FALSE(curve.settling(4));
  CHECK(curve.at(4) == doctest::Approx(2.0));
  for (int i = 0; i < 11; ++i) curve.observe(32, 5.0);
  curve.observe(4, 40.0);  // 11 old: stale; a stall first does not move the price
  CHECK(curve.settling(4));
  CHECK(curve.at(4) == doctest::Approx(2.0));
  curve.observe(4, 1.0);
  CHECK(curve.settling(4));
  CHECK(curve.at(4) == doctest::Approx(2.0));
  curve.observe(4, 1.0);  // three new samples: only they count
  CHECK_FALSE(curve.settling(4));
  CHECK(curve.at(4) == doctest::Approx(1.0));
  curve.observe(4, 1.0);
  curve.observe(4, 3.0);
  CHECK(curve.at(4) == doctest::Approx(1.0));  // median of 40 1 1 1 3
  CostCurve never(64);                         // forget_after 0
  for (int i = 0; i < 9; ++i) never.observe(4, 2.0);
  for (int i = 0; i < 1000; ++i) never.observe(32, 5.0);
  never.observe(4, 1.0);
  CHECK_FALSE(never.settling(4));
  CHECK(never.at(4) == doctest::Approx(2.0));
}

TEST_CASE("the cost table reads both curves at every size and names the steepness") {
  RoundCostModel costs(/*max_batch=*/2, /*k_max=*/4);
  CHECK(costs.table().verify_seconds.empty());
  CHECK(costs.table().describe() == "round costs not measured");
  costs.observe_verify(1, 0.010);
  costs.observe_verify(5, 0.015);
  costs.observe_verify(10, 0.030);
  costs.observe_draft_step(1, 0.002);
  const RoundCostTable table = costs.table();
  REQUIRE(table.verify_seconds.size() == 10);  // 2 x (4 + 1) rows
  REQUIRE(table.draft_step_seconds.size() == 2);
  CHECK(table.verify_seconds[0] == doctest::Approx(0.010));
  CHECK(table.verify_seconds[4] == doctest::Approx(0.015));
  CHECK(table.verify_seconds[2] == doctest::Approx(costs.verify_seconds(3)));
  CHECK(table.describe() ==
        "target pass 1 row 10 ms, 5 rows 1.50x, 9 rows 2.70x, 10 rows 3.00x; draft step 1 row 2 ms, 2 rows 2.00x");
}
