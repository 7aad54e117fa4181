#pragma once
// How many prompt tokens a round's target pass carries beside the running rows' verify
// rows. A chunk's rows share the pass (one read of the weights), so what it adds is the
// pass's cost at verify rows + chunk against verify rows alone, both read off the
// measured pass curve (RoundCostModel). While requests decode, the chunk is the largest
// that keeps the round within `slowdown` times the recent rounds without prompts, so a
// long prompt arriving stretches the running streams' inter-token gaps by at most that
// much; alone, the prompt takes the cap.
#include <cstdint>

namespace specd {

class RoundCostModel;

struct PrefillBudgetInputs {
  int64_t cap = 0;  // [engine] prefill_chunk: most prompt tokens a round (0: no bound)
  // Fewest a round, so a prompt always advances. Not a whole KV block: at 3B shapes on 2
  // cores one block of prompt rows costs as much as four streams' verify rows, so a
  // block-sized floor alone would double their rounds (BENCHMARKS.md, prefill beside decoding).
  int64_t floor = 4;
  double slowdown = 0;         // [engine] prefill_slowdown; 0: always the cap
  int32_t verify_rows = 0;     // the round's verify rows (sum of K + 1); 0: nobody decodes
  double round_seconds = 0;    // recent rounds without prompts (0: not measured yet)
  int64_t waiting_tokens = 0;  // prompt tokens left to prefill across newcomers
};

// What `chunk` prompt rows add to a pass of `verify_rows` rows, read off the curve (0
// without one).
double prefill_added_seconds(int32_t verify_rows, int64_t chunk, const RoundCostModel* costs);

// The prompt tokens for this round, in [min(floor, cap), cap] (cap when unbounded:
// waiting_tokens): the largest whose added cost fits the allowance.
// Without a measured curve or round time, the cap.
int64_t prefill_budget(const PrefillBudgetInputs& in, const RoundCostModel* costs);

}  // namespace specd
