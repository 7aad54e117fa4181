// Tests for engine/planning/adaptive_k: the Leviathan et al. speedup formula on hand-computed
// values, the choice of K (limits, caps, monotonicity), the acceptance estimator on
// exact updates and on simulated Bernoulli rounds, and AdaptiveK switching speculation
// off, probing with K = 1, and switching it back on.
#include "engine/planning/adaptive_k.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "engine/base/errors.hpp"

using namespace specd;

namespace {

// Rounds of a Bernoulli(a) acceptance process with a fixed seed: each draft is accepted
// with probability a until the first rejection. Own bit-to-double conversion, so the
// draws do not depend on the standard library's distributions.
class SimulatedRounds {
 public:
  explicit SimulatedRounds(uint64_t seed) : engine_(seed) {}
  int32_t accepted(double a, int32_t drafted) {
    int32_t n = 0;
    while (n < drafted && uniform() < a) ++n;
    return n;
  }

 private:
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  std::mt19937_64 engine_;
};

template <typename F>
void check_invalid_argument(F&& f) {
  try {
    f();
    FAIL("expected SpecdError(invalid_argument)");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
  }
}

}  // namespace

TEST_CASE("expected_speedup matches the formula on hand-computed values") {
  // (1 - 0.8^5) / (0.2 * 1.2) = 0.67232 / 0.24
  CHECK(expected_speedup(0.8, 4, 0.05) == doctest::Approx(2.8013333333333333).epsilon(1e-12));
  // (1 - 0.125) / (0.5 * 1.2) = 0.875 / 0.6
  CHECK(expected_speedup(0.5, 2, 0.1) == doctest::Approx(1.4583333333333333).epsilon(1e-12));
  CHECK(expected_speedup(0.8, 1, 0.0) == doctest::Approx(1.8).epsilon(1e-12));
  CHECK(expected_speedup(0.0, 5, 0.1) == doctest::Approx(1.0 / 1.5).epsilon(1e-12));
  CHECK(expected_speedup(0.3, 0, 0.7) == 1.0);
  CHECK(expected_speedup(0.0, 0, 0.0) == 1.0);
}

TEST_CASE("expected_speedup at a == 1 is the limit (K+1)/(Kc+1), continuous from below") {
  CHECK(expected_speedup(1.0, 3, 0.1) == doctest::Approx(4.0 / 1.3).epsilon(1e-12));
  CHECK(expected_speedup(1.0, 8, 0.0) == 9.0);
  // Close to 1 the expm1 form keeps full precision: 1 + a + ... + a^K, minus O(1 - a).
  CHECK(expected_speedup(1.0 - 1e-12, 3, 0.1) == doctest::Approx(4.0 / 1.3).epsilon(1e-11));
  CHECK(expected_speedup(1.0 - 1e-12, 3, 0.1) < expected_speedup(1.0, 3, 0.1));
}

TEST_CASE("expected_speedup rejects out-of-range arguments") {
  check_invalid_argument([] { expected_speedup(-0.1, 2, 0.1); });
  check_invalid_argument([] { expected_speedup(1.1, 2, 0.1); });
  check_invalid_argument([] { expected_speedup(std::nan(""), 2, 0.1); });
  check_invalid_argument([] { expected_speedup(0.5, -1, 0.1); });
  check_invalid_argument([] { expected_speedup(0.5, 2, -0.01); });
  check_invalid_argument([] { expected_speedup(0.5, 2, INFINITY); });
  check_invalid_argument([] { best_k(0.5, 0.1, -1); });
}

TEST_CASE("best_k is 0 when nothing is accepted, for any positive cost") {
  for (double c : {1e-6, 0.01, 0.05, 0.5, 1.0, 3.0}) CHECK(best_k(0.0, c, 16) == 0);
  CHECK(best_k(0.0, 0.0, 16) == 0);  // every K gives exactly 1: no gain, no drafts
  CHECK(best_k(0.9, 0.01, 0) == 0);
}

TEST_CASE("best_k for a cheap good draft is large and capped at k_max") {
  CHECK(best_k(0.9, 0.01, 8) == 8);
  CHECK(best_k(0.9, 0.01, 16) == 16);
  CHECK(best_k(0.9, 0.01, 64) == 24);  // the unconstrained optimum
  CHECK(best_k(1.0, 0.5, 12) == 12);   // (K+1)/(Kc+1) grows with K while c < 1
}

TEST_CASE("best_k picks the argmax: a = 0.7, c = 0.2 gives 3") {
  // K = 1..4: 1.41667, 1.56429, 1.58312, 1.54061
  CHECK(expected_speedup(0.7, 3, 0.2) > expected_speedup(0.7, 2, 0.2));
  CHECK(expected_speedup(0.7, 3, 0.2) > expected_speedup(0.7, 4, 0.2));
  CHECK(best_k(0.7, 0.2, 8) == 3);
  CHECK(best_k(0.7, 0.2, 2) == 2);
}

TEST_CASE("best_k over a grid of a and c (k_max 64), as in the paper's figure 3") {
  const std::vector<double> as{0.5, 0.7, 0.8, 0.9};
  const std::vector<std::vector<int32_t>> expected{
      {5, 9, 14, 24},  // c = 0.01
      {3, 6, 8, 13},   // c = 0.05
      {2, 4, 6, 10},   // c = 0.1
      {1, 3, 4, 7},    // c = 0.2
  };
  const std::vector<double> cs{0.01, 0.05, 0.1, 0.2};
  for (size_t i = 0; i < cs.size(); ++i) {
    for (size_t j = 0; j < as.size(); ++j) {
      CAPTURE(cs[i]);
      CAPTURE(as[j]);
      CHECK(best_k(as[j], cs[i], 64) == expected[i][j]);
    }
  }
}

TEST_CASE("speculation pays exactly when a > c (corollary 3.9)") {
  CHECK(best_k(0.2, 0.2, 8) == 0);
  CHECK(best_k(0.2 + 1e-6, 0.2, 8) == 1);
  CHECK(best_k(0.05, 0.2, 8) == 0);
  CHECK(best_k(0.5, 0.5, 8) == 0);
}

TEST_CASE("best_k never grows with c and never shrinks with a; speedup falls with c") {
  std::vector<double> cs{0.0, 1e-9, 1e-6, 1e-4};
  for (int i = 0; i <= 200; ++i) cs.push_back(i / 200.0 + 1e-4);
  std::vector<double> as;
  for (int i = 0; i <= 1000; ++i) as.push_back(i / 1000.0);
  for (double a : as) {
    int32_t previous = 64;
    for (double c : cs) {
      const int32_t k = best_k(a, c, 64);
      CAPTURE(a);
      CAPTURE(c);
      CHECK(k <= previous);
      previous = k;
    }
  }
  for (double c : cs) {
    int32_t previous = 0;
    for (double a : as) {
      const int32_t k = best_k(a, c, 64);
      CAPTURE(a);
      CAPTURE(c);
      CHECK(k >= previous);
      previous = k;
    }
  }
  for (int32_t k = 1; k <= 8; ++k) {
    CHECK(expected_speedup(0.8, k, 0.05) > expected_speedup(0.8, k, 0.06));
  }
}

TEST_CASE("the estimator starts at the prior and counts truncated geometric rounds") {
  AcceptanceEstimator est;  // 2.8 successes, 1.2 failures, decay 0.9
  CHECK(est.estimate() == doctest::Approx(0.7).epsilon(1e-12));
  est.observe(4, 2);  // 2 successes, 1 failure: (2.52 + 2) / (2.52 + 2 + 1.08 + 1)
  CHECK(est.estimate() == doctest::Approx(4.52 / 6.6).epsilon(1e-12));
  est.observe(4, 4);  // 4 successes, no failure
  CHECK(est.estimate() == doctest::Approx(8.068 / 9.94).epsilon(1e-12));
  est.observe(0, 0);  // no information
  CHECK(est.estimate() == doctest::Approx(8.068 / 9.94).epsilon(1e-12));
  est.observe(3, 0);
  CHECK(est.estimate() == doctest::Approx(7.2612 / (7.2612 + 2.6848)).epsilon(1e-12));
  check_invalid_argument([&] { est.observe(2, 3); });
  check_invalid_argument([&] { est.observe(2, -1); });
  check_invalid_argument([] { AcceptanceEstimator(1.5); });
  check_invalid_argument([] { AcceptanceEstimator(0.5, 0.0); });
  check_invalid_argument([] { AcceptanceEstimator(0.5, 4.0, 0.0); });
  check_invalid_argument([] { AcceptanceEstimator(0.5, 4.0, 1.5); });
}

TEST_CASE("without decay the estimator converges to the true rate within 0.01") {
  // 50000 rounds of K = 4 are at least 55000 Bernoulli trials: one standard deviation of
  // the estimate is at most 0.0017 (a = 0.3), so 0.01 is about 6 of them; the prior's
  // pull is below 1e-4.
  for (double a : {0.1, 0.3, 0.6, 0.9}) {
    SimulatedRounds sim(42);
    AcceptanceEstimator est(0.7, 4.0, 1.0);
    for (int i = 0; i < 50000; ++i) est.observe(4, sim.accepted(a, 4));
    CAPTURE(a);
    CHECK(std::abs(est.estimate() - a) < 0.01);
  }
}

TEST_CASE("with the default decay the estimator follows a drop in acceptance") {
  // A window of ~10 rounds: noisy, and a ratio of small counts runs ~0.01-0.02 low,
  // so the averages are held to 0.04.
  SimulatedRounds sim(7);
  AcceptanceEstimator est;
  double before = 0;
  double after = 0;
  for (int i = 0; i < 3000; ++i) {
    const double a = i < 1500 ? 0.9 : 0.3;
    est.observe(4, sim.accepted(a, 4));
    if (i >= 100 && i < 1500) before += est.estimate() / 1400;
    if (i >= 1600) after += est.estimate() / 1400;
  }
  CHECK(std::abs(before - 0.9) < 0.04);
  CHECK(std::abs(after - 0.3) < 0.04);
}

TEST_CASE("AdaptiveK with all drafts rejected shrinks K, turns off, probes every 16 rounds") {
  AdaptiveK adaptive(0.2, 8);
  std::vector<int32_t> ks;
  for (int round = 1; round <= 55; ++round) {
    ks.push_back(adaptive.next_k());
    adaptive.observe(ks.back(), 0);
  }
  std::vector<int32_t> expected(55, 0);
  const std::vector<int32_t> start{3, 2, 1, 1, 1, 1, 1};  // estimate 0.7, 0.548, 0.441, ...
  std::copy(start.begin(), start.end(), expected.begin());
  for (int probe : {23, 39, 55}) expected[probe - 1] = 1;  // off from round 8
  CHECK(ks == expected);
  CHECK(adaptive.acceptance() < 0.2);
}

TEST_CASE("AdaptiveK starts from the acceptance prior it is given") {
  // c = 0.2: best_k(0.7) = 3 with the default prior, best_k(0.3) = 1 (0.3 > c), and at
  // 0.15 < c speculation does not pay from the first round.
  CHECK(AdaptiveK(0.2, 8).acceptance() == doctest::Approx(0.7));
  CHECK(AdaptiveK(0.2, 8).next_k() == 3);
  AdaptiveK low(0.2, 8, 16, 0.3);
  CHECK(low.acceptance() == doctest::Approx(0.3));
  CHECK(low.next_k() == best_k(0.3, 0.2, 8));
  CHECK(best_k(0.3, 0.2, 8) == 1);
  CHECK(AdaptiveK(0.2, 8, 16, 0.15).next_k() == 0);
  CHECK_THROWS_AS(AdaptiveK(0.2, 8, 16, 1.5), SpecdError);
}

TEST_CASE("AdaptiveK turns off at a = 0.05, c = 0.2 and then only probes with K = 1") {
  SimulatedRounds sim(2024);
  AdaptiveK adaptive(0.2, 8);
  std::vector<std::pair<int, int32_t>> drafting;  // (round, K) of the rounds with K > 0
  for (int round = 1; round <= 140; ++round) {
    const int32_t k = adaptive.next_k();
    if (k > 0) drafting.emplace_back(round, k);
    adaptive.observe(k, sim.accepted(0.05, k));
  }
  // Off from round 11 (estimate 0.198 < c); probes 16 rounds apart. The probe at 90 is
  // accepted, lifting the estimate to 0.220 > c, so round 91 drafts once more; it is
  // rejected, speculation is off again and the probe cycle restarts from round 92.
  const std::vector<std::pair<int, int32_t>> expected{{1, 3},  {2, 2},  {3, 1},   {4, 1},   {5, 1},  {6, 1},  {7, 1},
                                                      {8, 1},  {9, 1},  {10, 1},  {26, 1},  {42, 1}, {58, 1}, {74, 1},
                                                      {90, 1}, {91, 1}, {107, 1}, {123, 1}, {139, 1}};
  CHECK(drafting == expected);

  // Over a long run it stays off: only K <= 1, and little more than one round in 16.
  int drafted_rounds = 0;
  for (int round = 141; round <= 16140; ++round) {
    const int32_t k = adaptive.next_k();
    REQUIRE(k <= 1);
    drafted_rounds += k;
    adaptive.observe(k, sim.accepted(0.05, k));
  }
  CHECK(drafted_rounds >= 1000);  // one probe per 16 rounds
  CHECK(drafted_rounds < 1100);
}

TEST_CASE("AdaptiveK switches back on when acceptance rises, and K grows to k_max") {
  AdaptiveK adaptive(0.2, 8);
  for (int round = 1; round <= 55; ++round) adaptive.observe(adaptive.next_k(), 0);
  std::vector<int32_t> ks;
  for (int round = 56; round <= 90; ++round) {
    ks.push_back(adaptive.next_k());
    adaptive.observe(ks.back(), ks.back());  // every draft accepted now
  }
  std::vector<int32_t> expected(15, 0);  // rounds 56..70: off, waiting for the probe
  for (int32_t k : {1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 8, 8, 8, 8, 8, 8, 8}) {
    expected.push_back(k);  // round 71 is the probe; one accepted probe turns it back on
  }
  CHECK(ks == expected);
}

TEST_CASE("AdaptiveK follows a changed cost ratio and probes even with probe_every 1") {
  AdaptiveK adaptive(0.05, 16);
  CHECK(adaptive.next_k() == 6);  // best_k(0.7, 0.05, 16)
  adaptive.set_cost_ratio(0.5);
  CHECK(adaptive.next_k() == 1);  // best_k(0.7, 0.5, 16)
  adaptive.set_cost_ratio(1.0);
  CHECK(adaptive.next_k() == 0);
  check_invalid_argument([&] { adaptive.set_cost_ratio(-1.0); });
  check_invalid_argument([] { AdaptiveK(0.1, 4, 0); });
  check_invalid_argument([] { AdaptiveK(0.1, -1); });

  AdaptiveK every_round(1.0, 4, 1);
  CHECK(every_round.next_k() == 1);
  CHECK(every_round.next_k() == 1);
  AdaptiveK never(0.1, 0);
  for (int i = 0; i < 40; ++i) CHECK(never.next_k() == 0);
}

TEST_CASE("RecentAcceptance keeps one estimate per drafter") {
  RecentAcceptance recent;
  CHECK(recent.estimate(DrafterKind::model) == doctest::Approx(kDefaultAcceptancePrior));
  CHECK(recent.estimate(DrafterKind::lookup) == doctest::Approx(kDefaultAcceptancePrior));
  for (int i = 0; i < 200; ++i) recent.observe(DrafterKind::lookup, 4, 0);  // every first draft rejected
  CHECK(recent.estimate(DrafterKind::lookup) < 0.05);
  CHECK(recent.estimate(DrafterKind::model) == doctest::Approx(kDefaultAcceptancePrior));
  for (int i = 0; i < 200; ++i) recent.observe(DrafterKind::model, 4, 4);
  CHECK(recent.estimate(DrafterKind::model) > 0.95);
  CHECK(recent.estimate(DrafterKind::lookup) < 0.05);
}
