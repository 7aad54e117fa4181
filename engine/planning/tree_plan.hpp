#pragma once
// Token-tree shapes (seed 004) and the `auto` choice of one: whether a row's drafts this
// round form a chain or a tree, and how many nodes the target verifies. A tree pays when
// the tokens its extra nodes add are worth more than the extra verify rows and draft
// rows cost, at the batch's current seconds per token; both sides are measured (the
// round cost curves, and each request's own gain from its tree rounds). Torch-free plain
// values, owned by the K planner.
#include <cstdint>
#include <vector>

#include "engine/planning/per_drafter.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd {

class RoundCostModel;

// The shape of a row's draft tree (a chain when `widths` is empty or all ones): under
// every expanded node of depth d, widths[d] children, depth widths.size() == K. `beam`
// (0: all) expands only the most probable nodes of each depth, by the draft's probability
// of their path; `nodes` (0: all) then keeps only the most probable nodes for the target
// (EAGLE-2's expand and rerank).
struct TreeShape {
  std::vector<int32_t> widths;
  int32_t beam = 0;
  int32_t nodes = 0;
  bool chain() const;
  friend bool operator==(const TreeShape&, const TreeShape&) = default;
};

// What a request's tree rounds returned beyond their first path (the chain of first
// children, which is what a chain would have drafted): an exponential average of the
// extra accepted tokens per tree round. Starts where recent requests' trees left it
// (RecentTreeGain), so a short request does not spend its first rounds relearning that
// trees do not pay; while trees do not pay, one round in kProbeEvery drafts one anyway
// to measure again.
class TreeGain {
 public:
  static constexpr double kPrior = 0.5;  // before any tree was measured: hopeful, so one is tried
  static constexpr double kWeight = 0.2;
  static constexpr int32_t kProbeEvery = 16;
  explicit TreeGain(double prior = kPrior, double weight = kWeight) : estimate_(prior), weight_(weight) {}
  double estimate() const { return estimate_; }
  void observe(int32_t beyond_first_path);
  // A round without a tree; true when the next one should probe.
  bool skipped();

 private:
  double estimate_;
  double weight_;
  int32_t skipped_ = 0;
};

// The tree gain of recent tree rounds across requests, per drafter: where a new
// request's TreeGain starts. Slower than a request's own (kWeight), as it averages
// over many requests.
struct RecentTreeGain : PerDrafter<TreeGain> {
  static constexpr double kWeight = 0.05;
  RecentTreeGain() : PerDrafter(TreeGain(TreeGain::kPrior, kWeight)) {}
};

// What the round costs as the batch is planned (chains everywhere): verify rows, draft
// rows per step, and seconds per expected token.
struct TreePricing {
  const RoundCostModel* costs = nullptr;  // null: not calibrated, shapes unpriced
  int32_t verify_rows = 0;
  int32_t draft_rows = 0;
  double seconds_per_token = 0;
};

// The auto shape for a row of depth K: a chain, or a tree expanding the kBeam most
// probable nodes of each depth with kChildren children each, of which the K + extra most
// probable are verified; extra is the most rows the verify curve adds within
// kVerifyShare of the pass (2K without curves). `probe` forces the tree. One expanded
// node per depth drafts exactly the chain's rows: the extra nodes are the siblings of
// its path and cost verify rows only (a beam of 3 on the padded 1B draft cost more in
// draft rows than its nodes returned, BENCHMARKS "Token trees against chains").
struct AutoTree {
  static constexpr int32_t kBeam = 1;
  static constexpr int32_t kChildren = 3;
  static constexpr double kVerifyShare = 0.25;
  static constexpr int32_t kMaxExtra = 16;
};
TreeShape choose_auto_tree(int32_t k, DrafterKind drafter, double gain, bool probe, const TreePricing& pricing);
// The auto tree of depth K with `extra` nodes beyond the chain (extra >= 1, K >= 1), once
// choose_auto_tree has priced it; for the lookup drafter, continuations merged into one
// prefix tree, as many as the extra nodes allow.
TreeShape auto_tree_shape(int32_t k, DrafterKind drafter, int32_t extra);

// Extra nodes the verify curve affords above `rows` (see AutoTree); 2K without curves.
int32_t affordable_extra_nodes(int32_t k, const TreePricing& pricing);

}  // namespace specd
