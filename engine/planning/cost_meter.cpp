#include "engine/planning/cost_meter.hpp"

#include <algorithm>

namespace specd {

void CostMeter::observe(const RoundCosts& round, double round_seconds) {
  if (rounds) {
    for (const DraftStepTime& step : round.draft_step_times) rounds->observe_draft_step(step.rows, step.seconds);
    // The pass curve prices rows, whichever kind: a chunk's rows cost what verify rows do.
    if (round.verify_tokens > 0)
      rounds->observe_verify(round.verify_tokens + round.chunk_tokens, round.verify_phase_seconds);
    if (round_seconds > 0)
      rounds->observe_overhead(std::max(0.0, round_seconds - round.draft_seconds - round.verify_phase_seconds),
                               round.draft_steps > 0);
  }
  // Exponential averages: recent rounds matter most, one outlier does not swing K.
  constexpr double w = 0.1;
  if (round.draft_steps > 0) {
    const double step = round.draft_seconds / round.draft_steps;
    draft_step_seconds = draft_step_seconds > 0 ? (1 - w) * draft_step_seconds + w * step : step;
  }
  if (round.chunk_tokens == 0)
    verify_seconds = verify_seconds > 0 ? (1 - w) * verify_seconds + w * round.verify_seconds : round.verify_seconds;
}

}  // namespace specd
