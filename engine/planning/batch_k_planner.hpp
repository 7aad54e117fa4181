#pragma once
// Batch-level speculation length: picks K for every row of a round together, to
// maximise the batch's expected tokens per second of round time. Per-request adaptive
// K (adaptive_k.hpp) prices a draft step against a one-row verify pass; in a batch the
// verify pass grows with the tokens all rows feed, so K that pays alone stops paying
// under load. Here the round's time is the measured draft steps (a function of the
// rows still drafting) plus the verify pass (a function of the tokens fed, sum of K+1)
// plus the per-round overhead, and the plan may be K = 0 for everyone (a plain batched
// target step) whenever drafting does not pay.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/planning/round_cost_model.hpp"

namespace specd {

// A row as the batch planner prices it, made by KPlanner from a RunningRequest. The
// round's planned row, what the lanes receive, is RowPlan (engine/speculation).
struct PricedRow {
  bool plannable = false;   // adaptive K: the planner chooses
  int32_t fixed_k = 0;      // otherwise this K is used (0: no speculation)
  bool draft_model = true;  // its drafts cost draft-model steps (false: prompt lookup, free)
  double acceptance = 0;    // the request's per-token acceptance estimate
  int32_t k_cap = 0;        // plannable rows: room left (cache, max_tokens), at most k_max
  // Tokens its draft cache lacks after undrafted rounds: if it drafts, the first draft
  // step feeds them as well, and that catch-up is priced as the wider step it is.
  int32_t draft_lag = 0;
};

struct BatchPlan {
  std::vector<int32_t> k;  // one per row
  double expected_tokens = 0;
  double expected_seconds = 0;
  double undrafted_seconds = 0;  // expected seconds had no plannable row drafted
  bool refresh = false;          // undrafted although drafting looked better: see PlanOptions
};

// While the plan drafts, the verify pass of the undrafted round is not run, so its price
// is not re-measured: it keeps whatever the machine's speed was when it last ran (on a
// shared host, +-20% between minutes), and a stale high price keeps the planner drafting
// where it no longer pays. Once that price has gone `refresh_after` verify passes
// without a measurement, rounds run undrafted to measure it until its bucket has
// settled (CostCurve: kSettleSamples new passes replace the old ones). 0: never.
inline constexpr int64_t kRefreshUndraftedAfter = RoundCostModel::kVerifyForgetAfter;

struct PlanOptions {
  int64_t refresh_after = 0;
};

// Expected tokens a row emits in a round with K drafts and per-token acceptance a:
// (1 - a^(K+1)) / (1 - a), K + 1 when a == 1.
double expected_round_tokens(double acceptance, int32_t k);

// Considers, for every common K in [0, k_max], drafting in the m plannable rows with the
// highest acceptance (m in [0, rows]); each drafting row uses min(K, its cap). Cost:
// O(k_max^2 * rows) cost-curve lookups. Ties go to less drafting. Needs a verify curve,
// and a draft-step curve when a row with draft_model may draft.
BatchPlan plan_batch_k(std::span<const PricedRow> rows, const RoundCostModel& model, int32_t k_max,
                       PlanOptions options = {});

}  // namespace specd
