#pragma once
// KPlanner: the one place that chooses K, the tokens each row drafts in a round. It owns
// everything the choice reads: the engine's bound on K, the measured costs and recent
// acceptance (CostMeter), and the batch plan (batch_k_planner.hpp) once the round
// costs are calibrated. Each request's adaptive K (adaptive_k.hpp) is a RequestK that
// the planner makes at admission and alone changes; the request's round state carries
// it. The scheduler calls plan() once before a round and observe() once after it.
// Plain values, no locking: owned by one scheduler (or one test driver).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/planning/adaptive_k.hpp"
#include "engine/planning/batch_k_planner.hpp"
#include "engine/planning/cost_meter.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/planning/tree_plan.hpp"
#include "engine/request/sequence_limits.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd {

// What the engine gives its planner: the bounds on K (k_max: no row drafts more; the
// caches' length), whether a draft model exists, and the round costs.
struct KPlanSetup {
  SequenceLimits sequence;
  bool has_draft_model = false;
  std::optional<RoundCostModel> round_costs;  // calibrated: K is planned for the batch as a whole
};

// One request's K across its rounds: how it asked for K (fixed, or adaptive up to its
// own bound), held within the engine's k_max, and its acceptance estimate. Made by
// KPlanner::start and changed only by the planner; the request's round state carries it.
class RequestK {
 public:
  double acceptance() const { return adaptive_k_.acceptance(); }
  // Extra tokens per tree round the `tree: auto` planning expects of this request.
  double tree_gain() const { return tree_gain_.estimate(); }

 private:
  friend class KPlanner;
  RequestK(bool drafts, DrafterKind drafter, bool adaptive, int32_t k, AdaptiveK adaptive_k, bool auto_tree,
           TreeGain tree_gain)
      : drafts_(drafts),
        drafter_(drafter),
        adaptive_(adaptive),
        k_(k),
        adaptive_k_(adaptive_k),
        auto_tree_(auto_tree),
        tree_gain_(tree_gain) {}

  bool drafts_;  // speculation is on and its drafter is there (a draft-model row needs its slot)
  DrafterKind drafter_;
  bool adaptive_;  // K chosen each round, up to k_; otherwise k_ every round
  int32_t k_;
  AdaptiveK adaptive_k_;  // fed by every round that drafted, fixed K too: the batch plan reads it
  bool auto_tree_;        // `tree: auto`: the planner chooses chain or tree each round
  TreeGain tree_gain_;
};

// A running request at a round's start, as the planner reads it.
struct RunningRequest {
  RequestK* request = nullptr;
  int64_t context = 0;    // the sequence's tokens, g included
  int32_t max_new = 0;    // tokens it may still generate: drafts never run past them
  int32_t draft_lag = 0;  // tokens its draft cache lacks beyond a drafting round's (SpecSequence)
};

// What a row did in the round.
struct KOutcome {
  RequestK* request = nullptr;
  int32_t drafted = 0;  // the depth drafted (a tree's extra nodes are not K)
  int32_t accepted = 0;
  int32_t beyond_first_path = -1;  // a tree round: accepted tokens its first path did not hold; -1: a chain
};

struct KPlan {
  std::vector<int32_t> k;          // one per row: drafts wanted, 0 for a plain target step
  std::vector<TreeShape> trees;    // one per row: the `auto` tree rows' shapes (empty widths: a chain)
  std::optional<BatchPlan> batch;  // what the batch planner expected, when it planned the round
};

class KPlanner {
 public:
  // Throws SpecdError(invalid_argument) for k_max < 0.
  explicit KPlanner(KPlanSetup setup);

  // A newly admitted request's K (`has_draft_slot`: it holds a draft-model KV slot). Its
  // acceptance estimate and tree gain start at its drafter's recent ones. Throws
  // SpecdError(invalid_argument) for a negative K bound.
  RequestK start(const SpecSettings& spec, bool has_draft_slot) const;

  // Each row's K for the coming round, in order. With calibrated round costs the
  // adaptive rows are planned for the batch as a whole (when the curves they need are
  // measured); otherwise each picks its own from its acceptance and the cost ratio. A
  // row that cannot draft gets 0; every K stays within the engine's k_max, the caches'
  // room and max_tokens.
  KPlan plan(std::span<const RunningRequest> rows);

  // What the round did, per row in plan order, and what its passes cost;
  // `round_seconds` is the whole round's wall time (0: unknown).
  void observe(std::span<const KOutcome> rows, const RoundCosts& costs, double round_seconds = 0);

  int32_t k_max() const { return k_max_; }
  bool plans_batch() const { return meter_.rounds.has_value(); }
  // The calibrated round costs (null when not calibrated).
  const RoundCostModel* round_costs() const { return meter_.rounds ? &*meter_.rounds : nullptr; }
  // Draft step over verify pass, as measured; 0 until both are.
  double measured_cost_ratio() const { return meter_.cost_ratio(0); }

 private:
  // Drafts that fit: verify writes g and K drafts after n - 1 tokens, and never past max_tokens.
  int64_t room(const RunningRequest& row) const;
  // The batch planner's K per row (-1: not planned), or nothing while its curves are unmeasured.
  std::optional<BatchPlan> plan_batch(std::span<const RunningRequest> rows, std::vector<int32_t>& planned) const;
  // `planned` (-1: none), else the request's own choice, capped by the room.
  int32_t row_k(const RunningRequest& row, int32_t planned) const;
  // The `auto` tree rows' shapes for the K chosen.
  void plan_trees(std::span<const RunningRequest> rows, KPlan& plan) const;

  int32_t k_max_;
  int64_t max_seq_len_;
  bool has_draft_model_;
  CostMeter meter_;
};

}  // namespace specd
