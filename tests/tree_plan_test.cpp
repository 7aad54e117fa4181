// The `auto` tree choice: a tree when the measured verify curve makes extra rows cheap
// and the request's trees have returned more than those rows cost; a chain otherwise,
// with a probe now and then so a changed request is measured again; a new request
// starts from what recent requests' trees returned.
#include <doctest/doctest.h>

#include <vector>

#include "engine/planning/k_planner.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/planning/tree_plan.hpp"

using namespace specd;

namespace {

// A verify pass of `rows` costs base + per_row * rows; a draft step 10 ms + 1 ms a row.
RoundCostModel costs(double base, double per_row) {
  RoundCostModel c(4, 8);
  for (int32_t rows : {1, 2, 3, 5, 8, 12, 16, 24, 36}) {
    for (int i = 0; i < 3; ++i) c.observe_verify(rows, base + per_row * rows);
  }
  for (int32_t rows : {1, 2, 4, 8}) c.observe_draft_step(rows, 0.010 + 0.001 * rows);
  return c;
}

}  // namespace

TEST_CASE("cheap verify rows and a measured gain give an expand-and-rerank tree of K + extra nodes") {
  const RoundCostModel c = costs(0.100, 0.002);  // a 5-row pass 0.110 s; 25% of it buys 13 rows
  const TreePricing pricing{&c, 5, 1, 0.040};
  CHECK(affordable_extra_nodes(4, pricing) == 8);  // capped at 2K
  // 8 extra rows cost 16 ms (one expanded node per depth adds no draft rows); a token is worth 40 ms.
  const TreeShape shape = choose_auto_tree(4, DrafterKind::model, 0.5, false, pricing);
  CHECK(shape.widths == std::vector<int32_t>(4, AutoTree::kChildren));
  CHECK(shape.beam == AutoTree::kBeam);
  CHECK(shape.nodes == 12);
  CHECK_FALSE(shape.chain());
}

TEST_CASE("a gain worth less than the extra rows cost keeps the chain, and a probe still drafts a tree") {
  const RoundCostModel c = costs(0.100, 0.002);
  const TreePricing pricing{&c, 5, 1, 0.040};
  // The extra rows cost 16 ms (above); 0.3 token at 40 ms is worth 12 ms.
  CHECK(choose_auto_tree(4, DrafterKind::model, 0.3, false, pricing).widths.empty());
  CHECK_FALSE(choose_auto_tree(4, DrafterKind::model, 0.1, true, pricing).chain());
  TreeGain gain;
  CHECK(gain.estimate() == TreeGain::kPrior);
  gain.observe(0);
  CHECK(gain.estimate() < TreeGain::kPrior);
  int rounds = 1;
  while (!gain.skipped()) ++rounds;
  CHECK(rounds == TreeGain::kProbeEvery);
}

TEST_CASE("a verify curve that grows steeply affords no extra rows: a chain") {
  const RoundCostModel c = costs(0.010, 0.020);  // K = 1: a row more adds 40% to the 2-row pass
  const TreePricing pricing{&c, 2, 1, 0.040};
  CHECK(affordable_extra_nodes(1, pricing) == 0);
  CHECK(choose_auto_tree(1, DrafterKind::model, 5.0, true, pricing).widths.empty());
}

TEST_CASE("lookup rows get merged continuations at depth 1; K = 0 rows get nothing") {
  const RoundCostModel c = costs(0.100, 0.002);
  const TreePricing pricing{&c, 5, 0, 0.040};
  const TreeShape lookup = choose_auto_tree(3, DrafterKind::lookup, 1.0, false, pricing);
  CHECK(lookup.widths == std::vector<int32_t>{3, 1, 1});
  CHECK(choose_auto_tree(0, DrafterKind::model, 1.0, true, pricing).widths.empty());
}

TEST_CASE("a new request's tree gain starts where recent requests' tree rounds left it, per drafter") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 8}, .has_draft_model = true});
  SpecSettings spec;
  spec.adaptive = true;
  spec.tree.mode = TreeMode::automatic;
  RequestK first = planner.start(spec, true);
  CHECK(first.tree_gain() == TreeGain::kPrior);
  // Tree rounds that returned nothing beyond their first path, and chain rounds (-1),
  // which say nothing of trees.
  for (int i = 0; i < 60; ++i) {
    const std::vector<KOutcome> rows = {{&first, 3, 2, 0}, {&first, 3, 3, -1}};
    planner.observe(rows, RoundCosts{});
  }
  const RequestK later = planner.start(spec, true);
  CHECK(later.tree_gain() < 0.05 * TreeGain::kPrior);
  spec.drafter = DrafterKind::lookup;
  CHECK(planner.start(spec, true).tree_gain() == TreeGain::kPrior);
  // Trees that pay raise it again.
  spec.drafter = DrafterKind::model;
  RequestK paying = planner.start(spec, true);
  for (int i = 0; i < 60; ++i) {
    const std::vector<KOutcome> rows = {{&paying, 3, 3, 1}};
    planner.observe(rows, RoundCosts{});
  }
  CHECK(planner.start(spec, true).tree_gain() > 0.9);
}
