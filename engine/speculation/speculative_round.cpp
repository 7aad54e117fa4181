#include "engine/speculation/speculative_round.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

DraftedRow::DraftedRow() = default;
DraftedRow::~DraftedRow() = default;
DraftedRow::DraftedRow(DraftedRow&&) noexcept = default;
DraftedRow& DraftedRow::operator=(DraftedRow&&) noexcept = default;

SpecSequence::SpecSequence(std::vector<int32_t> context, int32_t target_slot_, int32_t draft_slot_,
                           SamplingParams sampling_, SpecSettings spec_, RequestK k_state_)
    : tokens(std::move(context)),
      prompt_tokens(static_cast<int64_t>(tokens.size())),
      target_slot(target_slot_),
      draft_slot(draft_slot_),
      sampling(sampling_),
      rng(sampling_.seed),
      spec(spec_),
      k_state(std::move(k_state_)) {}

RunningRequest running_request(SpecSequence& seq, int32_t max_new) {
  return {&seq.k_state, static_cast<int64_t>(seq.tokens.size()), max_new, seq.draft_lag};
}

std::vector<int32_t> DraftedRow::penalty_context(int32_t node) const {
  if (!plan.sampling.reads_history()) return {};
  std::vector<int32_t> path;
  for (int32_t n = node; n >= 0; n = parents[static_cast<size_t>(n)]) path.push_back(drafts[static_cast<size_t>(n)]);
  std::vector<int32_t> context = plan.context;
  context.insert(context.end(), path.rbegin(), path.rend());
  return context;
}

void DraftedRow::keep_nodes(const std::vector<bool>& keep) {
  std::vector<int32_t> renumbered(drafts.size(), -1);
  size_t kept = 0;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const int32_t parent = parents[i];
    if (!keep[i] || (parent >= 0 && renumbered[static_cast<size_t>(parent)] < 0)) continue;
    renumbered[i] = static_cast<int32_t>(kept);
    drafts[kept] = drafts[i];
    parents[kept] = parent < 0 ? -1 : renumbered[static_cast<size_t>(parent)];
    if (!draft_q.empty()) draft_q[kept] = draft_q[i];
    ++kept;
  }
  drafts.resize(kept);
  parents.resize(kept);
  if (!draft_q.empty()) draft_q.resize(kept);
}

int32_t DraftedRow::depth_of(int32_t node) const {
  int32_t depth = 0;
  for (int32_t n = node; n >= 0; n = parents[static_cast<size_t>(n)]) ++depth;
  return depth;
}

RowPlan plan_row(const SpecSequence& seq, int32_t k, TreeShape tree) {
  RowPlan row;
  row.target_slot = seq.target_slot;
  row.draft_slot = seq.draft_slot;
  row.context = seq.tokens;
  row.prompt_tokens = seq.prompt_tokens;
  row.k = k;
  if (seq.spec.tree.mode == TreeMode::fixed) {
    tree = {};
    tree.widths.assign(seq.spec.tree.widths.begin(),
                       seq.spec.tree.widths.begin() +
                           std::min<size_t>(static_cast<size_t>(std::max(k, 0)), seq.spec.tree.widths.size()));
    row.k = static_cast<int32_t>(tree.widths.size());
  }
  row.tree = std::move(tree);
  row.sampling = seq.sampling;
  row.drafter = seq.spec.drafter;
  row.lookup_max_ngram = seq.spec.lookup_max_ngram;
  row.rng = seq.rng;
  row.grammar = seq.grammar;
  return row;
}

RoundDrafts undrafted(RoundPlan& plan) {
  RoundDrafts drafts;
  for (RowPlan& row : plan.rows) {
    drafts.rows.emplace_back();
    drafts.rows.back().plan = std::move(row);
    drafts.rows.back().plan.k = 0;
  }
  return drafts;
}

void advance_grammar(SpecSequence& seq, std::span<const int32_t> tokens) {
  if (!seq.grammar) return;
  grammar::GrammarMatcher& m = *seq.grammar;
  // A copy went past the parse bound on a lane: on a draft's path that ends nothing, on
  // the committed one the lane's mask there was incomplete. Filling each committed
  // state's mask again tells which (only after a copy hit the bound, which is rare).
  const bool recheck = m.copies_too_ambiguous();
  m.clear_copies_too_ambiguous();
  grammar::TokenBitset mask;
  for (int32_t token : tokens) {
    // After the grammar's end (its EOS) a round may still carry the bonus token, which
    // the EOS stop cuts: the grammar has nothing more to say about it.
    if (m.is_terminated()) return;
    if (recheck) m.fill_mask(mask);
    if (!m.too_ambiguous() && m.accept_token(token)) continue;
    if (m.too_ambiguous()) throw SpecdError(ErrorCode::bad_value, grammar::GrammarMatcher::too_ambiguous_message());
    throw SpecdError(ErrorCode::internal, "token " + std::to_string(token) + " generated against the grammar");
  }
}

void apply_output(SpecSequence& seq, const RoundOutput& out) {
  advance_grammar(seq, out.tokens);
  seq.tokens.insert(seq.tokens.end(), out.tokens.begin(), out.tokens.end());
  seq.rng = out.rng;
  if (seq.spec.drafter == DrafterKind::model) {
    seq.draft_lag = out.drafted > 0 ? 0 : seq.draft_lag + static_cast<int32_t>(out.tokens.size());
  }
}

KOutcome k_outcome(SpecSequence& seq, const RoundOutput& out) {
  return {&seq.k_state, out.depth, out.accepted, out.beyond_first_path};
}

}  // namespace specd
