#include "engine/planning/prefill_budget.hpp"

#include <algorithm>
#include <climits>

#include "engine/planning/round_cost_model.hpp"

namespace specd {

double prefill_added_seconds(int32_t verify_rows, int64_t chunk, const RoundCostModel* costs) {
  if (!costs || !costs->verify_ready()) return 0;
  const int64_t rows = std::min<int64_t>(verify_rows + chunk, INT32_MAX);
  return costs->verify_seconds(static_cast<int32_t>(rows)) - costs->verify_seconds(verify_rows);
}

int64_t prefill_budget(const PrefillBudgetInputs& in, const RoundCostModel* costs) {
  const int64_t cap = in.cap > 0 ? in.cap : std::max<int64_t>(in.waiting_tokens, 1);
  if (in.verify_rows <= 0 || in.slowdown <= 1 || in.round_seconds <= 0 || !costs || !costs->verify_ready()) return cap;
  const int64_t floor = std::clamp<int64_t>(in.floor, 1, cap);
  const double allowed = (in.slowdown - 1) * in.round_seconds;
  auto added = [&](int64_t chunk) { return prefill_added_seconds(in.verify_rows, chunk, costs); };
  // The curve rises with rows: the largest chunk within the allowance, by bisection.
  if (added(cap) <= allowed) return cap;
  int64_t lo = floor, hi = cap;  // added(lo) may exceed too: the floor still goes
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (added(mid) <= allowed ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace specd
