#include "engine/planning/adaptive_k.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

[[noreturn]] void fail(const std::string& what) { throw SpecdError(ErrorCode::invalid_argument, what); }

void check_cost_ratio(double c) {
  if (!std::isfinite(c) || c < 0) fail("cost ratio c must be a finite number >= 0");
}

// Speedups within this relative distance count as equal. It absorbs rounding (at a == c,
// K = 1 gives exactly 1 on paper) and keeps best_k monotone in a and c even at c == 0,
// where every extra draft adds a vanishing a^(K+1) and rounding would decide.
constexpr double kTieTolerance = 1e-9;

}  // namespace

double expected_speedup(double a, int32_t k, double c) {
  if (!(a >= 0 && a <= 1)) fail("acceptance a must be in [0, 1]");
  if (k < 0) fail("k must be >= 0");
  check_cost_ratio(c);
  if (k == 0) return 1.0;
  const double cost = k * c + 1.0;
  if (a == 1.0) return (k + 1.0) / cost;
  // 1 - a^(K+1) as -expm1((K+1) ln a): no cancellation when a is close to 1, where the
  // direct form would lose most digits. 1 - a itself is exact for a >= 0.5.
  const double tokens = -std::expm1((k + 1.0) * std::log(a)) / (1.0 - a);
  return tokens / cost;
}

int32_t best_k(double a, double c, int32_t k_max) {
  if (k_max < 0) fail("k_max must be >= 0");
  double max_speedup = 1.0;  // K = 0
  for (int32_t k = 1; k <= k_max; ++k) {
    max_speedup = std::max(max_speedup, expected_speedup(a, k, c));
  }
  if (max_speedup <= 1.0 + kTieTolerance) return 0;
  // The smallest K that is as good as the best: no draft steps for an unmeasurable gain.
  for (int32_t k = 1; k < k_max; ++k) {
    if (expected_speedup(a, k, c) >= max_speedup * (1.0 - kTieTolerance)) return k;
  }
  return k_max;
}

AcceptanceEstimator::AcceptanceEstimator(double prior, double prior_weight, double decay) {
  if (!(prior >= 0 && prior <= 1)) fail("acceptance prior must be in [0, 1]");
  if (!std::isfinite(prior_weight) || prior_weight <= 0) fail("prior_weight must be > 0");
  if (!(decay > 0 && decay <= 1)) fail("decay must be in (0, 1]");
  // The prior is a starting count, not a permanent one: a fixed prior of weight w would
  // floor the estimate at prior*w / (w + 1/(1-decay)), 0.2 with the defaults, and a
  // poor draft could then never be switched off when c >= 0.2.
  successes_ = prior * prior_weight;
  failures_ = (1.0 - prior) * prior_weight;
  decay_ = decay;
}

void AcceptanceEstimator::observe(int32_t drafted, int32_t accepted) {
  if (accepted < 0 || accepted > drafted) {
    fail("a round needs 0 <= accepted <= drafted, got drafted=" + std::to_string(drafted) +
         " accepted=" + std::to_string(accepted));
  }
  if (drafted == 0) return;
  successes_ = decay_ * successes_ + accepted;
  failures_ = decay_ * failures_ + (accepted < drafted ? 1.0 : 0.0);
}

double AcceptanceEstimator::estimate() const {
  // Positive: the prior weight is > 0 and every informative round adds at least one count.
  return successes_ / (successes_ + failures_);
}

double AcceptanceEstimator::estimate_toward(double pooled, double weight) const {
  return (successes_ + pooled * weight) / (successes_ + failures_ + weight);
}

AdaptiveK::AdaptiveK(double c, int32_t k_max, int32_t probe_every, double acceptance_prior)
    : estimator_(acceptance_prior), cost_ratio_(c), k_max_(k_max), probe_every_(probe_every) {
  check_cost_ratio(c);
  if (k_max < 0) fail("k_max must be >= 0");
  if (probe_every < 1) fail("probe_every must be >= 1");
}

int32_t AdaptiveK::next_k() {
  const int32_t k = best_k(acceptance(), cost_ratio_, k_max_);
  if (k > 0) {
    rounds_off_ = 0;
    return k;
  }
  // Off: the estimate only moves when rounds are observed, so without probes a request
  // that was switched off would stay off for good.
  if (k_max_ == 0 || ++rounds_off_ < probe_every_) return 0;
  rounds_off_ = 0;
  return 1;
}

void AdaptiveK::observe(int32_t drafted, int32_t accepted) { estimator_.observe(drafted, accepted); }

double AdaptiveK::acceptance() const {
  return pooled_acceptance_ ? estimator_.estimate_toward(*pooled_acceptance_, kPooledAcceptanceWeight)
                            : estimator_.estimate();
}

void AdaptiveK::set_pooled_acceptance(double a) {
  if (!(a >= 0 && a <= 1)) fail("pooled acceptance must be in [0, 1]");
  pooled_acceptance_ = a;
}

void AdaptiveK::set_cost_ratio(double c) {
  check_cost_ratio(c);
  cost_ratio_ = c;
}

}  // namespace specd
