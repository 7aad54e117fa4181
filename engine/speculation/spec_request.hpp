#pragma once
// The measured costs that adaptive K and the batch planner read.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/planning/round_cost_model.hpp"
#include "engine/request/finish_reason.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class Tokenizer;

// Measured draft-step and verify costs, for adaptive K's cost ratio c and, when
// `rounds` is set (calibrated: cost_calibration.hpp), for the batch K planner.
struct CostMeter {
  std::optional<RoundCostModel> rounds;
  RecentAcceptance acceptance;                         // where new requests' acceptance estimates start
  double draft_step_seconds = 0;                       // mean batched draft step
  double verify_seconds = 0;                           // mean batched target pass
  static constexpr double kUnmeasuredCostRatio = 0.1;  // until the first rounds are measured
  double cost_ratio(double fallback = kUnmeasuredCostRatio) const {
    return draft_step_seconds > 0 && verify_seconds > 0 ? draft_step_seconds / verify_seconds : fallback;
  }
  // Also refits `rounds`; `round_seconds` is the whole round's wall time (0: unknown),
  // from which the per-round overhead outside the two passes is learnt. `batch` is the
  // round's rows in order, for the per-drafter acceptance (empty: not recorded).
  void observe(const RoundResult& round, double round_seconds = 0, std::span<SpecSequence* const> batch = {});
};

}  // namespace specd
