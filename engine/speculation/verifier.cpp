#include "engine/speculation/verifier.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "engine/base/errors.hpp"
#include "engine/model/kv_block_pool.hpp"
#include "engine/model/kv_ledger.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/rejection_sampler.hpp"
#include "engine/sampling/sampling.hpp"
#include "engine/speculation/grammar_mask.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Structured output: each row of the pass masked with the grammar's state at its node
// (row 0 at g, row n + 1 after node n). A row under a node the grammar refuses keeps its
// logits: that node's masked probability is 0, so nothing below it is ever accepted.
at::Tensor masked_for_grammar(const DraftedRow& row, const at::Tensor& logits) {
  if (!row.plan.grammar) return logits;
  at::Tensor out = logits.to(at::kFloat).contiguous().clone();
  grammar::GrammarMatcher root = *row.plan.grammar;
  auto mask_row = [&](int64_t r, grammar::GrammarMatcher& state) {
    at::Tensor view = out[r];  // a contiguous row of `out`: masked where it stands
    mask_in_place(view, state);
  };
  mask_row(0, root);
  std::vector<std::optional<grammar::GrammarMatcher>> states = grammar_states(root, row.drafts, row.parents);
  for (size_t n = 0; n < states.size(); ++n) {
    if (states[n]) mask_row(static_cast<int64_t>(n) + 1, *states[n]);
  }
  return out;
}

TreeOutcome accept_reject(DraftedRow& row, const at::Tensor& raw_logits) {
  const SamplingParams& sp = row.plan.sampling;
  const at::Tensor logits = masked_for_grammar(row, raw_logits);
  const DraftTree tree{row.drafts, row.parents};
  if (sp.greedy() && !sp.changes_logits()) {  // the raw argmax
    const at::Tensor best = logits.argmax(-1).contiguous();
    const int64_t* choice = best.data_ptr<int64_t>();
    return verify_tree_greedy([&](int32_t r) { return static_cast<int32_t>(choice[r]); }, tree);
  }
  if (sp.greedy()) {
    return verify_tree_greedy(
        [&](int32_t r) {
          return static_cast<int32_t>(penalized_logits(logits[r], sp, {row.penalty_context(r - 1), row.prompt_tokens()})
                                          .argmax()
                                          .item<int64_t>());
        },
        tree);
  }
  return verify_tree_sampled(
      [&](int32_t r) {
        return sampling_distribution(logits[r], sp, {row.penalty_context(r - 1), row.prompt_tokens()});
      },
      row.draft_q, tree, row.plan.rng);
}

// Accepted tokens after the leading run of first children (each the lowest-numbered
// child of its parent): what the tree gained over the chain of first children.
int32_t beyond_first_path(const DraftedRow& row, const std::vector<int32_t>& path) {
  size_t lead = 0;
  int32_t parent = -1;
  for (; lead < path.size(); ++lead) {
    const auto first = std::find(row.parents.begin(), row.parents.end(), parent) - row.parents.begin();
    if (first != path[lead]) break;
    parent = path[lead];
  }
  return static_cast<int32_t>(path.size() - lead);
}

}  // namespace

Verifier::Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvBlockPool> storage)
    : model_(std::move(model)), storage_(std::move(storage)) {}

Verifier::~Verifier() = default;
Verifier::Verifier(Verifier&&) noexcept = default;

TargetPassResult Verifier::pass_on(KvLedger& ledger, RoundDrafts& drafts, std::span<TargetPrefill> chunks) {
  map_prefixes(ledger, chunks);
  const PassLayout layout = lay_out_pass(ledger, drafts, chunks);
  TargetPassResult out;
  try {
    out = pass(drafts, chunks, layout);
  } catch (...) {
    drop_pass(ledger, layout);
    throw;
  }
  keep_pass(ledger, layout, drafts, out.paths, chunks);
  return out;
}

std::vector<FirstToken> Verifier::prefill(KvLedger& ledger, std::span<TargetPrefill> prompts) {
  RoundDrafts none;
  return pass_on(ledger, none, prompts).first_tokens;
}

RoundResult Verifier::verify(KvLedger& ledger, RoundDrafts& drafts) { return pass_on(ledger, drafts, {}).round; }

TargetPassResult Verifier::pass(RoundDrafts& drafts, std::span<const TargetPrefill> chunks, const PassLayout& layout) {
  torch::InferenceMode inference;
  const auto phase_start = Clock::now();
  TargetPassResult out;
  RoundResult& result = out.round;
  result.draft_steps = drafts.draft_steps;
  result.draft_seconds = drafts.draft_seconds;
  result.draft_step_times = drafts.step_times;
  // Each drafted row's tree (g and its drafts) first, then each chunk's prompt tokens
  // (its last row's logits).
  std::vector<std::vector<ForwardRow>> tree_rows;
  std::vector<ForwardSegment> segments;
  for (size_t b = 0; b < drafts.rows.size(); ++b) {
    tree_rows.push_back(forward_rows(layout.trees[b], drafts.rows[b]));
    result.verify_tokens += static_cast<int32_t>(tree_rows.back().size());
  }
  for (size_t b = 0; b < tree_rows.size(); ++b)
    segments.push_back({{}, layout.trees[b].slot, LogitsFor::all_positions, tree_rows[b]});
  for (const TargetPrefill& p : chunks) {
    segments.push_back({std::span<const int32_t>(p.prompt).subspan(p.start, p.chunk_end() - p.start), p.target_slot,
                        LogitsFor::last_position});
    result.chunk_tokens += static_cast<int32_t>(p.chunk_end() - p.start);
  }
  apply_copies(layout.tables, *storage_);
  if (segments.empty()) return out;
  const auto t0 = Clock::now();
  const at::Tensor logits = model_->forward(segments, layout.tables, *storage_);
  result.verify_seconds = seconds_since(t0);
  int64_t at = 0;  // the logits' rows, segment by segment
  for (size_t b = 0; b < drafts.rows.size(); ++b) {
    DraftedRow& row = drafts.rows[b];
    const auto width = static_cast<int64_t>(tree_rows[b].size());
    const TreeOutcome outcome = accept_reject(row, logits.narrow(0, at, width));
    at += width;
    out.paths.push_back(outcome.path);
    RoundOutput row_out;
    for (int32_t node : outcome.path) row_out.tokens.push_back(row.drafts[static_cast<size_t>(node)]);
    row_out.tokens.push_back(outcome.next_token);
    if (row.plan.sampling.logprobs >= 0) {
      // Node n's logits are row n + 1 (row 0 is g): each token is judged at its parent's row.
      const at::Tensor rows = logits.narrow(0, at - width, width);
      int32_t parent_row = 0;
      for (size_t j = 0; j < row_out.tokens.size(); ++j) {
        row_out.logprobs.push_back(token_logprobs(rows[parent_row], row_out.tokens[j], row.plan.sampling.logprobs));
        if (j < outcome.path.size()) parent_row = outcome.path[j] + 1;
      }
    }
    row_out.drafted = static_cast<int32_t>(row.drafts.size());
    row_out.accepted = static_cast<int32_t>(outcome.path.size());
    row_out.depth = row.plan.k;
    if (row_out.drafted > row_out.depth) row_out.beyond_first_path = beyond_first_path(row, outcome.path);
    row_out.rng = row.plan.rng;
    result.rows.push_back(std::move(row_out));
  }
  for (const TargetPrefill& p : chunks) {
    const at::Tensor last = logits[at++];
    if (!p.completes() || !p.sample) continue;
    std::optional<at::Tensor> masked;
    if (p.grammar) {
      grammar::GrammarMatcher state = *p.grammar;  // the request's own state advances in the scheduler
      masked = grammar_masked(last, state);
    }
    Rng rng = p.rng;
    const int32_t token =
        sample_token(masked ? *masked : last, p.sampling, {p.prompt, static_cast<int64_t>(p.prompt.size())}, rng);
    FirstToken first{token, rng, {}};
    if (p.sampling.logprobs >= 0) first.logprobs.push_back(token_logprobs(last, token, p.sampling.logprobs));
    out.first_tokens.push_back(std::move(first));
  }
  if (!drafts.rows.empty()) {
    result.verify_start = phase_start;
    result.verify_phase_seconds = seconds_since(phase_start);
  }
  return out;
}

}  // namespace specd
