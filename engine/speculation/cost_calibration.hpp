#pragma once
// Start-up calibration of the batch K planner's cost model: times verify-shaped target
// passes (rows x (K+1) tokens) and batched one-token draft steps on free KV slots that
// first get `context` tokens each (serving passes attend over a context), smallest
// first, until a time budget runs out, so the planner knows the cost curve beyond the
// shapes the first rounds happen to use. The slots must be free and are left
// empty. Each function runs on the lane that owns its model (its intra-op budget is
// part of what is measured).
#include <cstdint>

namespace specd {

class KvCache;
class LlamaModel;
class RoundCostModel;

struct CalibrationLimits {
  int32_t max_rows = 32;      // up to the KV slots available
  int32_t k_max = 8;          // verify widths 1..k_max+1
  double budget_seconds = 2;  // per call; the largest shapes are skipped when it runs out
  int32_t context = 64;       // tokens already in each slot (capped by the cache's length)
};

// Returns the number of shapes measured.
int32_t calibrate_verify(LlamaModel& target, KvCache& cache, RoundCostModel& out, CalibrationLimits limits);
int32_t calibrate_draft_steps(LlamaModel& draft, KvCache& cache, RoundCostModel& out, CalibrationLimits limits);

}  // namespace specd
