#include "engine/speculation/verifier.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
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

// Keeps the nodes on the path to the first leaf (a chain: what a tree shrinks to when the
// pool has no blocks for its branches).
void keep_first_path(DraftedRow& row) {
  std::vector<bool> keep(row.drafts.size(), false);
  int32_t last = -1;
  for (size_t i = 0; i < row.drafts.size(); ++i) {
    if (row.parents[i] != last) continue;
    keep[i] = true;
    last = static_cast<int32_t>(i);
  }
  row.keep_nodes(keep);
  row.plan.k = static_cast<int32_t>(row.drafts.size());
}

// One drafted row in the target pass: the root g at the slot's length and each node at
// g's position plus its depth. Every leaf after the first gets a branch of the slot
// (the first uses the slot); a row reads the branch of its first leaf and writes into
// those of all leaves under it, so it sees exactly its path.
struct TreeRows {
  int32_t slot = 0;
  int64_t base = 0;
  std::vector<int32_t> branches;             // forked for this row
  std::vector<std::vector<int32_t>> writes;  // per target row: the slots it writes, its read slot first
  std::vector<ForwardRow> rows;
};

// `spare`: blocks of the pool the pass's rows have not yet been counted against; a tree
// whose branches do not fit shrinks to its first path.
TreeRows lay_out(DraftedRow& row, KvCache& cache, int64_t& spare) {
  TreeRows t;
  t.slot = row.plan.target_slot;
  t.base = cache.length(t.slot);
  const int64_t block = cache.block_size();
  auto leaves_of = [&] {
    std::vector<bool> parent(row.drafts.size(), false);
    for (int32_t p : row.parents)
      if (p >= 0) parent[static_cast<size_t>(p)] = true;
    std::vector<int32_t> leaves;
    for (size_t i = 0; i < row.drafts.size(); ++i)
      if (!parent[i]) leaves.push_back(static_cast<int32_t>(i));
    return leaves;
  };
  std::vector<int32_t> leaves = leaves_of();
  // Each path copies the slot's partial block and takes blocks up to its leaf.
  auto needed = [&] {
    int64_t n = 0;
    for (int32_t leaf : leaves) n += 1 + (t.base % block + row.depth_of(leaf)) / block;
    return n;
  };
  if (leaves.size() > 1 && needed() > spare) {
    keep_first_path(row);
    leaves = leaves_of();
  }
  spare -= needed();
  t.writes.resize(row.drafts.size() + 1);
  for (size_t l = 0; l < leaves.size(); ++l) {
    const int32_t slot = l == 0 ? t.slot : cache.fork(t.slot);
    if (l > 0) t.branches.push_back(slot);
    t.writes[0].push_back(slot);
    for (int32_t n = leaves[l]; n >= 0; n = row.parents[static_cast<size_t>(n)]) {
      t.writes[static_cast<size_t>(n) + 1].push_back(slot);
    }
  }
  if (leaves.empty()) t.writes[0].push_back(t.slot);
  const int32_t g = row.plan.context.back();
  for (size_t r = 0; r < t.writes.size(); ++r) {
    const std::vector<int32_t>& w = t.writes[r];
    const int32_t token = r == 0 ? g : row.drafts[r - 1];
    const int64_t depth = r == 0 ? 0 : row.depth_of(static_cast<int32_t>(r) - 1);
    t.rows.push_back({token, w.front(), t.base + depth, std::span<const int32_t>(w).subspan(1)});
  }
  return t;
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

// After verification: the slot keeps the branch holding the accepted path, cut to the
// context and that path; every other branch is dropped.
void keep_path(KvCache& cache, const TreeRows& t, const TreeOutcome& outcome) {
  const int32_t keep = t.writes[outcome.path.empty() ? 0 : static_cast<size_t>(outcome.path.back()) + 1].front();
  for (int32_t branch : t.branches) {
    if (branch != keep) cache.drop(branch);
  }
  if (keep != t.slot) cache.adopt(t.slot, keep);
  const int64_t length = t.base + static_cast<int64_t>(outcome.path.size()) + 1;
  cache.set_length(t.slot, length);
  cache.truncate_to(t.slot, length);  // the blocks a deeper leaf took
}

}  // namespace

Verifier::Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache)
    : model_(std::move(model)), cache_(std::move(cache)) {}

Verifier::~Verifier() = default;
Verifier::Verifier(Verifier&&) noexcept = default;

void Verifier::map_prefixes(std::span<TargetPrefill> chunks) {
  for (TargetPrefill& p : chunks) {
    if (p.start != 0) continue;
    cache_->release(p.target_slot);
    p.cached = p.use_prefix_cache ? cache_->map_prefix(p.target_slot, p.prompt) : 0;
    if (p.cached > 0) {
      const int64_t width = p.chunk_end();
      p.start = p.cached;
      p.end = std::min<int64_t>(static_cast<int64_t>(p.prompt.size()), p.cached + width);
    }
  }
}

std::vector<FirstToken> Verifier::prefill(std::span<TargetPrefill> prompts) {
  map_prefixes(prompts);
  RoundDrafts none;
  return pass(none, prompts).first_tokens;
}

RoundResult Verifier::verify(RoundDrafts& drafts) { return pass(drafts, {}).round; }

TargetPassResult Verifier::pass(RoundDrafts& drafts, std::span<TargetPrefill> chunks) {
  torch::InferenceMode inference;
  const auto phase_start = Clock::now();
  TargetPassResult out;
  RoundResult& result = out.round;
  result.draft_steps = drafts.draft_steps;
  result.draft_seconds = drafts.draft_seconds;
  result.draft_step_times = drafts.step_times;
  // Each drafted row's tree (g and its drafts) first, then each chunk's prompt tokens
  // (its last row's logits).
  std::vector<TreeRows> trees;
  std::vector<ForwardSegment> segments;
  int64_t spare = cache_->available_blocks();
  auto drop_branches = [&] {
    for (const TreeRows& t : trees)
      for (int32_t branch : t.branches) cache_->drop(branch);
  };
  try {
    for (DraftedRow& row : drafts.rows) {
      if (static_cast<int64_t>(row.plan.context.size()) > cache_->max_seq_len()) {
        throw SpecdError(ErrorCode::out_of_capacity, "speculative round: a sequence has no room left in the KV cache");
      }
      trees.push_back(lay_out(row, *cache_, spare));
      result.verify_tokens += static_cast<int32_t>(trees.back().rows.size());
    }
    for (size_t b = 0; b < trees.size(); ++b)
      segments.push_back({{}, trees[b].slot, LogitsFor::all_positions, trees[b].rows});
    for (TargetPrefill& p : chunks) {
      cache_->set_length(p.target_slot, p.start);
      segments.push_back({std::span<const int32_t>(p.prompt).subspan(p.start, p.chunk_end() - p.start), p.target_slot,
                          LogitsFor::last_position});
      result.chunk_tokens += static_cast<int32_t>(p.chunk_end() - p.start);
    }
  } catch (...) {
    drop_branches();
    throw;
  }
  if (segments.empty()) return out;
  const auto t0 = Clock::now();
  at::Tensor logits;
  try {
    logits = model_->forward(segments, *cache_);
  } catch (...) {
    drop_branches();
    throw;
  }
  result.verify_seconds = seconds_since(t0);
  int64_t at = 0;  // the logits' rows, segment by segment
  for (size_t b = 0; b < drafts.rows.size(); ++b) {
    DraftedRow& row = drafts.rows[b];
    const TreeRows& tree = trees[b];
    const auto width = static_cast<int64_t>(tree.rows.size());
    const TreeOutcome outcome = accept_reject(row, logits.narrow(0, at, width));
    at += width;
    keep_path(*cache_, tree, outcome);
    RoundOutput row_out;
    for (int32_t node : outcome.path) row_out.tokens.push_back(row.drafts[static_cast<size_t>(node)]);
    // The slot now holds the context and the accepted path: all of it kept.
    std::vector<int32_t> kept = row.plan.context;
    kept.insert(kept.end(), row_out.tokens.begin(), row_out.tokens.end());
    cache_->commit(row.plan.target_slot, kept);
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
  for (TargetPrefill& p : chunks) {
    const at::Tensor last = logits[at++];
    cache_->commit(p.target_slot, std::span<const int32_t>(p.prompt).first(p.chunk_end()));
    if (!p.completes() || !p.sample) continue;
    std::optional<at::Tensor> masked;
    if (p.grammar) masked = grammar_masked(last, *p.grammar);
    const int32_t token =
        sample_token(masked ? *masked : last, p.sampling, {p.prompt, static_cast<int64_t>(p.prompt.size())}, p.rng);
    FirstToken first{token, p.rng, {}};
    if (p.sampling.logprobs >= 0) first.logprobs.push_back(token_logprobs(last, token, p.sampling.logprobs));
    out.first_tokens.push_back(std::move(first));
  }
  if (!drafts.rows.empty()) {
    result.verify_start = phase_start;
    result.verify_phase_seconds = seconds_since(phase_start);
  }
  return out;
}

void Verifier::release(int32_t target_slot) { cache_->release(target_slot); }

}  // namespace specd
