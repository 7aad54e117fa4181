#include "engine/planning/tree_plan.hpp"

#include <algorithm>

#include "engine/planning/round_cost_model.hpp"

namespace specd {

bool TreeShape::chain() const {
  return std::all_of(widths.begin(), widths.end(), [](int32_t w) { return w == 1; });
}

void TreeGain::observe(int32_t beyond_first_path) {
  estimate_ += weight_ * (static_cast<double>(beyond_first_path) - estimate_);
  skipped_ = 0;
}

bool TreeGain::skipped() { return ++skipped_ >= kProbeEvery; }

int32_t affordable_extra_nodes(int32_t k, const TreePricing& pricing) {
  const int32_t most = std::min(2 * k, AutoTree::kMaxExtra);
  if (!pricing.costs || !pricing.costs->verify_ready()) return most;
  const double pass = pricing.costs->verify_seconds(pricing.verify_rows);
  int32_t extra = 0;
  while (extra < most &&
         pricing.costs->verify_seconds(pricing.verify_rows + extra + 1) - pass <= AutoTree::kVerifyShare * pass) {
    ++extra;
  }
  return extra;
}

TreeShape choose_auto_tree(int32_t k, DrafterKind drafter, double gain, bool probe, const TreePricing& pricing) {
  TreeShape shape;
  if (k < 1) return shape;
  const int32_t extra = affordable_extra_nodes(k, pricing);
  if (extra < 1) return shape;
  if (!probe && pricing.costs && pricing.costs->verify_ready() && pricing.seconds_per_token > 0) {
    const RoundCostModel& c = *pricing.costs;
    double cost = c.verify_seconds(pricing.verify_rows + extra) - c.verify_seconds(pricing.verify_rows);
    if (drafter == DrafterKind::model && k > 1 && c.draft_ready()) {
      // Levels after the first feed kBeam rows instead of one.
      const int32_t rows = std::max(pricing.draft_rows, 1);
      cost += (k - 1) * std::max(0.0, c.draft_step_seconds(rows + AutoTree::kBeam - 1) - c.draft_step_seconds(rows));
    }
    if (gain * pricing.seconds_per_token < cost) return shape;
  }
  return auto_tree_shape(k, drafter, extra);
}

TreeShape auto_tree_shape(int32_t k, DrafterKind drafter, int32_t extra) {
  TreeShape shape;
  if (drafter == DrafterKind::lookup) {
    shape.widths.assign(static_cast<size_t>(k), 1);
    shape.widths[0] = std::min(1 + extra / std::max(k, 1), AutoTree::kChildren);
    return shape;
  }
  shape.widths.assign(static_cast<size_t>(k), AutoTree::kChildren);
  shape.beam = AutoTree::kBeam;
  shape.nodes = k + extra;
  return shape;
}

}  // namespace specd
