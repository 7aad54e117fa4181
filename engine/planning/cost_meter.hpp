#pragma once
// What the rounds so far cost and accepted, as the K planner (k_planner.hpp) reads them:
// the mean draft step and verify pass (adaptive K's cost ratio c), the recent
// acceptance and tree gain per drafter (where a new request's estimates start) and, when calibrated,
// the round cost curves the batch planner prices plans with. Plain values, owned by
// one planner.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/planning/adaptive_k.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/planning/tree_plan.hpp"

namespace specd {

// One batched draft forward: how many rows it fed and how long it took.
struct DraftStepTime {
  int32_t rows = 0;
  double seconds = 0;
};

// What a round's passes cost, as the lanes measured them (the speculative round's
// RoundResult carries these).
struct RoundCosts {
  int32_t draft_steps = 0;  // batched draft forward calls (0 when no row drafted with the model)
  double draft_seconds = 0;
  double verify_seconds = 0;  // the one batched target pass
  std::vector<DraftStepTime> draft_step_times;
  int32_t verify_tokens = 0;        // verify rows the target pass fed: sum of K+1
  int32_t chunk_tokens = 0;         // newcomers' prompt tokens the same pass carried
  double verify_phase_seconds = 0;  // the pass plus accept/reject and cache truncation
};

struct CostMeter {
  std::optional<RoundCostModel> rounds;                // calibrated round costs (cost_calibration.hpp)
  RecentAcceptance acceptance;                         // where new requests' acceptance estimates start
  RecentTreeGain tree_gain;                            // where new `tree: auto` requests' gains start
  double draft_step_seconds = 0;                       // mean batched draft step
  double verify_seconds = 0;                           // mean batched target pass without prompt chunks
  static constexpr double kUnmeasuredCostRatio = 0.1;  // until the first rounds are measured
  double cost_ratio(double fallback = kUnmeasuredCostRatio) const {
    return draft_step_seconds > 0 && verify_seconds > 0 ? draft_step_seconds / verify_seconds : fallback;
  }
  // Also refits `rounds`; `round_seconds` is the whole round's wall time (0: unknown),
  // from which the per-round overhead outside the two passes is learnt. Rows' acceptance
  // goes to `acceptance` separately: the meter does not know the rows' drafters.
  void observe(const RoundCosts& round, double round_seconds = 0);
};

}  // namespace specd
