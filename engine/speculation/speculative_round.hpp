#pragma once
// One speculative round over a batch of requests (DESIGN.md, "The speculative round"),
// as values that cross lanes: the scheduler keeps each request's SpecSequence and
// builds a RoundPlan from it with the K that the K planner (k_planner.hpp) chose; the
// draft side (drafter.hpp) turns the plan into RoundDrafts on the draft lane; the
// target side (verifier.hpp) verifies them on the target lane and returns a
// RoundResult; the scheduler applies each row's output to its sequence. Rows may use
// different K (0 = a plain target step) and drafters. Torch-free: at::Tensor is named
// only inside DraftedRow, whose special members live in the .cpp.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/base/rng.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/planning/cost_meter.hpp"
#include "engine/planning/k_planner.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/request/spec_settings.hpp"
#include "engine/request/token_logprobs.hpp"

namespace at {
class Tensor;
}

namespace specd {

// One request's state across rounds, kept by one owner (the scheduler, or a test
// driver). Invariant between rounds: `tokens` is the whole context (prompt + generated)
// ending with the last sampled token g; the target cache holds every token but g.
struct SpecSequence {
  SpecSequence(std::vector<int32_t> context, int32_t target_slot, int32_t draft_slot, SamplingParams sampling,
               SpecSettings spec, RequestK k_state);

  std::vector<int32_t> tokens;
  int64_t prompt_tokens;  // tokens[0, prompt_tokens) are the prompt: the context it was made with
  int32_t target_slot;
  int32_t draft_slot;  // -1 when the request has no draft slot
  SamplingParams sampling;
  Rng rng;
  SpecSettings spec;
  RequestK k_state;  // from KPlanner::start; only the planner changes it
  // Tokens appended by rounds in which the draft model did not draft for this row: its
  // draft cache lacks them, and its next first draft step feeds them too.
  int32_t draft_lag = 0;
  // Structured output: the grammar's state after every generated token (nullopt: free text).
  std::optional<grammar::GrammarMatcher> grammar;
};

// One row of a round, by value: everything the lanes need and nothing they keep.
struct RowPlan {
  int32_t target_slot = -1;
  int32_t draft_slot = -1;
  std::vector<int32_t> context;  // the sequence's tokens, ending with g
  int64_t prompt_tokens = 0;     // context[0, prompt_tokens) is the prompt
  int32_t k = 0;                 // drafts wanted (lookup may find fewer); a tree's depth
  TreeShape tree;                // empty widths: a chain of k
  SamplingParams sampling;
  DrafterKind drafter = DrafterKind::model;
  int32_t lookup_max_ngram = 3;
  Rng rng{0};  // the request's stream: drafting and verifying draw from it in turn
  // The grammar's state at g (a copy): both sides mask their logits at each node with it
  // advanced along the node's path, so the draft proposes and the target judges only
  // tokens the grammar allows.
  std::optional<grammar::GrammarMatcher> grammar;
};

struct RoundPlan {
  std::vector<RowPlan> rows;
};

// One row's proposal: the draft side's output, the verify side's input.
struct DraftedRow {
  DraftedRow();
  ~DraftedRow();
  DraftedRow(DraftedRow&&) noexcept;
  DraftedRow& operator=(DraftedRow&&) noexcept;

  // What the penalties see at a node (-1: the root g): the context, then the node's
  // path. Empty when the row's params read no history, as nothing reads it then.
  std::vector<int32_t> penalty_context(int32_t node) const;
  // The same as sampling's TokenHistory view (valid while `tokens` lives).
  int64_t prompt_tokens() const { return plan.prompt_tokens; }
  int32_t depth_of(int32_t node) const;
  // Keeps the nodes marked in `keep` whose ancestors are all kept, renumbered in order.
  void keep_nodes(const std::vector<bool>& keep);

  RowPlan plan;                  // plan.context ends with g; plan.k is the depth found
  std::vector<int32_t> drafts;   // the nodes' tokens, level by level (a chain: t1..tk)
  std::vector<int32_t> parents;  // per node, its parent (-1: g); parents[i] < i
  // Per node, the q it was drawn from (sampling with the draft model only; a sibling's
  // is q less its elder siblings); empty for lookup drafts, deterministic children whose
  // q is the point mass on their token.
  std::vector<at::Tensor> draft_q;
};

// A draft slot or branch after a proposal, and the tokens it now holds (keep_proposal).
struct DraftKept {
  int32_t slot = -1;
  std::vector<int32_t> fed;
};

struct RoundDrafts {
  std::vector<DraftedRow> rows;  // in plan order
  int32_t draft_steps = 0;
  double draft_seconds = 0;
  std::vector<DraftStepTime> step_times;
  std::vector<DraftKept> kept;  // the draft model's slots and branches the proposal wrote
};

// What one row produced: 1..K+1 tokens (the accepted path, then the correction or bonus
// token), how many were drafted and accepted, and the request's stream after the round.
struct RoundOutput {
  std::vector<int32_t> tokens;
  int32_t drafted = 0;  // nodes the target verified (a chain: K)
  int32_t accepted = 0;
  int32_t depth = 0;  // of the verified tree (a chain: K)
  // A tree: accepted tokens beyond the leading first children (the chain it contains); -1: a chain.
  int32_t beyond_first_path = -1;
  Rng rng{0};
  std::vector<TokenLogprobs> logprobs;  // per token, when the request asks (sampling.logprobs >= 0)
};

// The rows' outputs and what the round's passes cost (RoundCosts, which the K planner
// learns from).
struct RoundResult : RoundCosts {
  std::vector<RoundOutput> rows;                       // in plan order
  std::chrono::steady_clock::time_point verify_start;  // when the verify phase began on its lane (traces)
};

// The sequence as the K planner reads it before a round (`max_new`: max_tokens left).
RunningRequest running_request(SpecSequence& seq, int32_t max_new);
// The row's plan with the K the planner chose (copies the context and the random stream)
// and its tree: the request's fixed shape cut to K, or the planner's for `auto`.
RowPlan plan_row(const SpecSequence& seq, int32_t k, TreeShape tree = {});
// A round in which no row drafts: the plan's rows as drafted rows with K = 0, for the
// verify side alone.
RoundDrafts undrafted(RoundPlan& plan);
// Applies a row's output: appends its tokens and takes its random stream (unless
// advance_grammar throws, which leaves the sequence to end). (The statistics a client
// sees are RequestOutput's: of the kept tokens.)
void apply_output(SpecSequence& seq, const RoundOutput& out);
// Advances the sequence's grammar past tokens it generated (apply_output and the first
// token call it), up to its end (EOS). A grammar past the parse bound on the committed
// path (here, or in a lane's mask at a committed state) throws SpecdError bad_value "the
// grammar is too ambiguous: ...", which ends that request alone; a token the grammar
// refuses otherwise is a bug in the masking: SpecdError internal.
void advance_grammar(SpecSequence& seq, std::span<const int32_t> tokens);
// What the row did, for KPlanner::observe.
KOutcome k_outcome(SpecSequence& seq, const RoundOutput& out);

}  // namespace specd
