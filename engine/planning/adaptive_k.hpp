#pragma once
// Adaptive speculation length: pick the number of drafts K per round from a running
// estimate of the request's per-token acceptance rate and the draft/target cost ratio,
// using the walltime model of Leviathan et al. 2023 (Theorem 3.8, section 3.5).
// Plain values; an AdaptiveK belongs to one request and is touched by one strand only.
#include <cstdint>
#include <optional>

#include "engine/planning/per_drafter.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd {

// Expected tokens per unit of target-only time for acceptance a, K drafts, cost ratio c:
// (1 - a^(K+1)) / ((1 - a) (K c + 1)); K = 0 means no speculation and gives 1.
// a == 1 is handled as the limit (K+1)/(Kc+1).
// Throws SpecdError(invalid_argument) unless 0 <= a <= 1, k >= 0 and c is finite, >= 0.
double expected_speedup(double a, int32_t k, double c);

// The K in [0, k_max] maximising expected_speedup; 0 when no K beats target-only.
// Speedups within a relative 1e-9 count as ties and go to the smaller K (no draft steps
// for an unmeasurable gain), which keeps the answer non-decreasing in a and
// non-increasing in c. Cost: 2 * k_max evaluations.
int32_t best_k(double a, double c, int32_t k_max);

// Where an acceptance estimate starts when nothing better is known, and how often a
// request with speculation off probes with K = 1.
inline constexpr double kDefaultAcceptancePrior = 0.7;
inline constexpr int32_t kDefaultProbeEvery = 16;

// Per-request running estimate of the per-token acceptance a from the rounds seen so far.
// A round with K drafted and n accepted is a truncated geometric observation: n successes
// and, when n < K, one failure. Counts decay by `decay` per round so the estimate follows
// drift; they start at a Beta-like prior of prior*prior_weight successes and
// (1-prior)*prior_weight failures, which decays with them.
class AcceptanceEstimator {
 public:
  // Throws SpecdError(invalid_argument) unless 0 <= prior <= 1, prior_weight > 0
  // and 0 < decay <= 1.
  explicit AcceptanceEstimator(double prior = kDefaultAcceptancePrior, double prior_weight = 4.0, double decay = 0.9);

  // One round. A round with drafted == 0 carries no information and changes nothing.
  // Throws SpecdError(invalid_argument) unless 0 <= accepted <= drafted.
  void observe(int32_t drafted, int32_t accepted);
  double estimate() const;
  // The estimate with `weight` more rounds' worth of counts at `pooled`: a request's own
  // short window shrunk toward what all requests' rows accepted (empirical Bayes).
  double estimate_toward(double pooled, double weight) const;

 private:
  double successes_;
  double failures_;
  double decay_;
};

// Acceptance over the recent drafting rows of all requests, one estimate per drafter (a
// lookup row and a draft-model row of the same text accept very differently). A new
// request's estimate starts here instead of at a fixed guess, so the planner does not
// count on acceptance the pair does not have during the request's first rounds. Decay
// 0.99 per row: about the last hundred drafting rows.
struct RecentAcceptance : PerDrafter<AcceptanceEstimator> {
  RecentAcceptance() : PerDrafter(AcceptanceEstimator{kDefaultAcceptancePrior, 4.0, 0.99}) {}
};

// How many rounds' weight the pooled acceptance (RecentAcceptance) keeps in a request's
// planning estimate. A request's own window is about 10 rounds (decay 0.9): alone it
// swung 0.55-0.86 around a true 0.82 on the padded pair, and the planner, whose
// optimum K turns on a few hundredths of a, chose K = 1 in most rounds where K = 3 paid.
// The price: a request whose drafts are all rejected while the pool's are not falls
// only to pooled * 8 / 18 within a window (0.36 at a pool of 0.8). That is off where a
// draft step costs a third of a verify pass or more (the padded pair); a cheaper draft
// keeps such a request at K = 1, a loss of at most that draft step a round.
inline constexpr double kPooledAcceptanceWeight = 8.0;

// Chooses K for each round of one request: best_k on the current acceptance estimate.
// Once that is 0 (speculation off), every probe_every-th round runs one K = 1 probe so a
// request whose acceptance recovers is switched back on.
class AdaptiveK {
 public:
  // Throws SpecdError(invalid_argument) for c < 0 (or not finite), k_max < 0, probe_every < 1,
  // or a prior outside [0, 1]. `acceptance_prior`: where the estimate starts, e.g. the
  // acceptance the engine measured over recent requests.
  AdaptiveK(double c, int32_t k_max, int32_t probe_every = kDefaultProbeEvery,
            double acceptance_prior = kDefaultAcceptancePrior);

  // K for the next round; call once per round. The engine may still cap it (sequence end).
  int32_t next_k();
  // What the round actually did (drafted may be below next_k's answer after a cap).
  void observe(int32_t drafted, int32_t accepted);
  // The request's own estimate, shrunk toward the pooled acceptance once one is set.
  double acceptance() const;
  // The draft/target cost ratio, as measured by the caller; throws like the constructor.
  void set_cost_ratio(double c);
  // What recent rows of the request's drafter accepted across all requests
  // (RecentAcceptance), kPooledAcceptanceWeight rounds' worth; throws unless in [0, 1].
  void set_pooled_acceptance(double a);

 private:
  AcceptanceEstimator estimator_;
  std::optional<double> pooled_acceptance_;  // none set: the request's own estimate alone
  double cost_ratio_;
  int32_t k_max_;
  int32_t probe_every_;
  int32_t rounds_off_ = 0;  // rounds since speculation went off or since the last probe
};

}  // namespace specd
