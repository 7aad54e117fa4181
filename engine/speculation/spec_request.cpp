#include "engine/speculation/spec_request.hpp"

#include <algorithm>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

void CostMeter::observe(const RoundResult& round, double round_seconds, std::span<SpecSequence* const> batch) {
  for (size_t i = 0; i < batch.size() && i < round.rows.size(); ++i) {
    if (round.rows[i].drafted > 0)
      acceptance.observe(batch[i]->spec.drafter, round.rows[i].drafted, round.rows[i].accepted);
  }
  if (rounds) {
    record_round_costs(*rounds, round);
    if (round_seconds > 0)
      rounds->observe_overhead(std::max(0.0, round_seconds - round.draft_seconds - round.verify_phase_seconds));
  }
  // Exponential averages: recent rounds matter most, one outlier does not swing K.
  constexpr double w = 0.1;
  if (round.draft_steps > 0) {
    const double step = round.draft_seconds / round.draft_steps;
    draft_step_seconds = draft_step_seconds > 0 ? (1 - w) * draft_step_seconds + w * step : step;
  }
  verify_seconds = verify_seconds > 0 ? (1 - w) * verify_seconds + w * round.verify_seconds : round.verify_seconds;
}

}  // namespace specd
