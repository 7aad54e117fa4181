#include "engine/speculation/drafter.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include <deque>
#include <map>

#include "engine/model/kv_block_pool.hpp"
#include "engine/model/kv_ledger.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/sampling.hpp"
#include "engine/speculation/grammar_mask.hpp"
#include "engine/speculation/prompt_lookup.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One draft-model row's tree while it grows: the nodes fed at the coming level (-1 is
// the root g) and the cache slot or branch each runs in.
struct Growing {
  DraftedRow* row;
  std::vector<double> path_prob;  // per node: the draft's probability of its path
  std::vector<int32_t> frontier;
  std::vector<int32_t> branch;
  // Structured output: per node, the grammar's state after it (the root's is the plan's).
  std::vector<grammar::GrammarMatcher> grammar_states;
  const DraftRowLayout* layout = nullptr;
  // A chain: the first node the next step feeds (its newest sampled node, then any forced
  // ones after it); -1 before the first step, which feeds the context.
  int32_t run_start = -1;
  size_t spare_used = 0;                        // of layout->spare
  std::map<int32_t, std::vector<int32_t>> fed;  // per slot or branch written, what it holds
};

// Children of `parent` from the draft's logits there. Greedy: the `count` most likely
// tokens. Sampling: `count` distinct tokens drawn without replacement, each keeping the
// distribution it was drawn from (q without its elder siblings): a sibling is then a
// likely token the target's residual still wants, where a fixed top-q sibling is accepted
// only with the residual's mass on it. The penalties see the node's path.
void add_children(Growing& g, int32_t parent, const at::Tensor& logits_in, int32_t count, bool need_probs) {
  DraftedRow& row = *g.row;
  const SamplingParams& sp = row.plan.sampling;
  const std::vector<int32_t> context = row.penalty_context(parent);
  const TokenHistory history{context, row.prompt_tokens()};
  const double base = parent >= 0 ? g.path_prob[static_cast<size_t>(parent)] : 1.0;
  // Under a grammar the draft proposes from its masked distribution: a child is a token
  // the grammar allows after the parent's path (none when it allows nothing).
  std::optional<grammar::GrammarMatcher> state;  // a copy: adding children grows grammar_states
  std::optional<at::Tensor> masked;
  if (row.plan.grammar) {
    state = parent < 0 ? *row.plan.grammar : g.grammar_states[static_cast<size_t>(parent)];
    masked = grammar_masked(logits_in, *state);
    if (!masked) return;
  }
  const at::Tensor& logits = masked ? *masked : logits_in;
  auto add = [&](int32_t token, at::Tensor q, double prob) {
    if (state) {
      grammar::GrammarMatcher next = *state;
      if (!next.accept_token(token)) return;  // a masked-out pick (more children asked than allowed)
      g.grammar_states.push_back(std::move(next));
    }
    row.drafts.push_back(token);
    row.parents.push_back(parent);
    if (!sp.greedy()) row.draft_q.push_back(std::move(q));
    g.path_prob.push_back(base * prob);
  };
  if (sp.greedy()) {
    const at::Tensor z = penalized_logits(logits, sp, history);
    if (count == 1 && !need_probs) {
      add(static_cast<int32_t>(z.argmax().item<int64_t>()), {}, 1.0);
      return;
    }
    const at::Tensor probs = at::softmax(z, -1);
    const auto [top, idx] = probs.topk(count);
    for (int32_t c = 0; c < count; ++c) add(static_cast<int32_t>(idx[c].item<int64_t>()), {}, top[c].item<double>());
    return;
  }
  const at::Tensor q = sampling_distribution(logits, sp, history);
  for (Draw& d : draw_distinct(q, count, row.plan.rng)) {
    const double prob = q[d.token].item<double>();
    add(d.token, std::move(d.q), prob);
  }
}

// Under a grammar, a token it leaves no choice over is drafted without the draft model:
// it is the only token the masked draft could propose and the masked target could accept
// (its q is one-hot). A chain takes every such token after its newest node, up to K, and
// the next step feeds them with that node as one wider step.
void append_forced(Growing& g) {
  DraftedRow& row = *g.row;
  grammar::TokenBitset mask;
  while (!row.drafts.empty() && static_cast<int32_t>(row.drafts.size()) < row.plan.k) {
    const auto last = static_cast<int32_t>(row.drafts.size()) - 1;
    grammar::GrammarMatcher next = g.grammar_states[static_cast<size_t>(last)];
    const int32_t token = next.forced_token(mask);
    if (token < 0 || !next.accept_token(token)) return;
    g.grammar_states.push_back(std::move(next));
    row.drafts.push_back(token);
    row.parents.push_back(last);
    if (!row.plan.sampling.greedy()) {
      at::Tensor q = at::zeros_like(row.draft_q.back());
      q[token] = 1.0;
      row.draft_q.push_back(std::move(q));
    }
    g.path_prob.push_back(g.path_prob[static_cast<size_t>(last)]);
  }
}

// Keeps the `nodes` nodes of highest path probability (ancestors before descendants on
// ties, so the kept set is a tree). Sampling rows keep the first `nodes` in level order
// instead, as they expand the first `beam` nodes of a level: a drawn child must be
// verified whatever token was drawn (kept for being likely, it would no longer be a draw
// from q), and nothing tested before it may depend on its value either.
void keep_most_probable(Growing& g, int32_t nodes) {
  DraftedRow& row = *g.row;
  const auto n = static_cast<int32_t>(row.drafts.size());
  if (nodes <= 0 || nodes >= n) return;
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (row.plan.sampling.greedy()) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return g.path_prob[static_cast<size_t>(a)] > g.path_prob[static_cast<size_t>(b)];
    });
  }
  std::vector<bool> keep(static_cast<size_t>(n), false);
  for (int32_t i = 0; i < nodes; ++i) keep[static_cast<size_t>(order[static_cast<size_t>(i)])] = true;
  row.keep_nodes(keep);
}

}  // namespace

Drafter::Drafter(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvBlockPool> storage)
    : model_(std::move(model)), storage_(std::move(storage)) {}

Drafter::~Drafter() = default;
Drafter::Drafter(Drafter&&) noexcept = default;

RoundDrafts Drafter::propose(KvLedger* ledger, RoundPlan& plan) {
  const ProposalLayout layout = lay_out_proposal(ledger, plan);
  RoundDrafts drafts;
  try {
    drafts = propose(plan, layout);
  } catch (...) {
    drop_proposal(ledger, layout);
    throw;
  }
  keep_proposal(ledger, layout, drafts.kept);
  return drafts;
}

void Drafter::prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts) {
  if (prompts.empty() || !model_) return;
  const DraftPrefillLayout layout = lay_out_draft_prefill(ledger, prompts);
  try {
    prefill(prompts, layout);
  } catch (...) {
    drop_draft_prefill(ledger, prompts, layout);
    throw;
  }
  keep_draft_prefill(ledger, prompts);
}

RoundDrafts Drafter::propose(RoundPlan& plan, const ProposalLayout& layout) {
  torch::InferenceMode inference;
  RoundDrafts result;
  result.rows.resize(plan.rows.size());
  std::vector<DraftedRow*> model_rows;
  for (size_t b = 0; b < plan.rows.size(); ++b) {
    DraftedRow& row = result.rows[b];
    row.plan = std::move(plan.rows[b]);
    if (row.plan.k == 0) continue;
    if (row.plan.drafter == DrafterKind::lookup) {
      int32_t continuations = 1;
      for (int32_t w : row.plan.tree.widths) continuations = std::max(continuations, w);
      LookupTree tree = propose_tree_by_lookup(row.plan.context, row.plan.k, continuations, row.plan.lookup_max_ngram);
      row.drafts = std::move(tree.tokens);
      row.parents = std::move(tree.parents);
      // Nodes come level by level: the last is the deepest.
      row.plan.k = row.drafts.empty() ? 0 : row.depth_of(static_cast<int32_t>(row.drafts.size()) - 1);
    } else if (model_ && b < layout.rows.size() && layout.rows[b].slot >= 0) {
      model_rows.push_back(&row);
    } else {
      row.plan.k = 0;  // no draft model or slot: a plain target step
    }
  }
  const auto t0 = Clock::now();
  result.draft_steps = run_steps(model_rows, layout, result.step_times, result.kept);
  result.draft_seconds = seconds_since(t0);
  return result;
}

// One batched pass per level of the trees. After a drafting round a slot lacks at most
// the last draft and the target's token; a wider first step catches up a slot that fell
// behind (plain rounds, a reused slot): its time prices that catch-up, not a draft step,
// and in the cost curve it made the planner think drafting dear for many rounds after.
int32_t Drafter::run_steps(std::vector<DraftedRow*>& rows, const ProposalLayout& layout,
                           std::vector<DraftStepTime>& times, std::vector<DraftKept>& kept) {
  if (storage_) apply_copies(layout.tables, *storage_);
  if (rows.empty()) return 0;
  constexpr size_t kDraftStepFeed = 2;
  KvTables tables = layout.tables;  // the lane's view: lengths advance as it writes
  std::vector<Growing> trees;
  // The r-th model row is the r-th row the layout gave a slot (propose keeps plan order).
  for (size_t b = 0, r = 0; b < layout.rows.size() && r < rows.size(); ++b) {
    if (layout.rows[b].slot < 0) continue;
    Growing g{rows[r], {}, {-1}, {layout.rows[b].slot}};
    g.layout = &layout.rows[b];
    const std::vector<int32_t>& context = rows[r]->plan.context;
    g.fed[g.layout->slot].assign(context.begin(), context.begin() + g.layout->from);
    trees.push_back(std::move(g));
    ++r;
  }
  // A branch taking a path over from its parent's: the blocks past the shared context.
  auto start_path = [&](Growing& g, int32_t from, int32_t to) {
    const SlotTable& parent = tables.at(from);
    SlotTable& branch = tables.at(to);
    const auto context = static_cast<int64_t>(g.row->plan.context.size());
    for (int64_t i = context / tables.block_size; i * tables.block_size < parent.length; ++i) {
      storage_->copy_block(parent.blocks[static_cast<size_t>(i)], branch.blocks[static_cast<size_t>(i)]);
    }
    branch.length = parent.length;
    g.fed[to] = g.fed[from];
  };
  int32_t steps = 0;
  for (int32_t level = 0;; ++level) {
    const auto step_start = Clock::now();
    std::vector<ForwardSegment> segments;
    std::deque<int32_t> node_feed;  // one token per non-root entry (stable addresses)
    size_t widest = 0;
    for (Growing& g : trees) {
      const std::vector<int32_t>& context = g.row->plan.context;
      for (size_t e = 0; e < g.frontier.size(); ++e) {
        const int32_t branch = g.branch[e];
        std::span<const int32_t> feed;
        if (g.frontier[e] < 0) {
          const int64_t from = g.layout->from;
          feed = std::span<const int32_t>(context).subspan(static_cast<size_t>(from));
        } else if (g.run_start >= 0) {  // a chain: its newest node and the forced run after it
          feed = std::span<const int32_t>(g.row->drafts)
                     .subspan(static_cast<size_t>(g.run_start), static_cast<size_t>(g.frontier[e] - g.run_start + 1));
        } else {
          node_feed.push_back(g.row->drafts[static_cast<size_t>(g.frontier[e])]);
          feed = std::span<const int32_t>(&node_feed.back(), 1);
        }
        std::vector<int32_t>& f = g.fed[branch];
        f.insert(f.end(), feed.begin(), feed.end());
        widest = std::max(widest, feed.size());
        segments.push_back({feed, branch, LogitsFor::last_position});
      }
    }
    if (segments.empty()) break;
    at::Tensor logits = model_->forward(segments, tables, *storage_);
    for (const ForwardSegment& seg : segments) tables.at(seg.slot).length += static_cast<int64_t>(seg.tokens.size());
    int64_t at = 0;
    for (Growing& g : trees) {
      const TreeShape& shape = g.row->plan.tree;
      const bool chain = shape.widths.empty();
      const bool need_probs = shape.beam > 0 || shape.nodes > 0;
      const auto first_new = static_cast<int32_t>(g.row->drafts.size());
      for (size_t e = 0; e < g.frontier.size(); ++e) {
        const int32_t width = chain ? 1 : shape.widths[static_cast<size_t>(level)];
        add_children(g, g.frontier[e], logits[at++], width, need_probs);
      }
      if (chain && g.row->plan.grammar && static_cast<int32_t>(g.row->drafts.size()) > first_new) append_forced(g);
      // The next level expands the new nodes (the most probable `beam` of them, or for
      // sampling rows the first: see keep_most_probable), each in a branch holding its
      // path: the first child of a node continues its parent's. A chain expands its newest
      // node in its one slot, feeding the forced run before it in the same step.
      std::vector<int32_t> next, next_branch;
      const auto newest = static_cast<int32_t>(g.row->drafts.size()) - 1;
      if (chain) {
        if (newest >= first_new && newest + 1 < g.row->plan.k) {
          next = {newest};
          next_branch = {g.branch.front()};
          g.run_start = first_new;
        }
      } else if (level + 1 < g.row->plan.k) {
        for (auto i = first_new; i < static_cast<int32_t>(g.row->drafts.size()); ++i) next.push_back(i);
        if (shape.beam > 0 && static_cast<int32_t>(next.size()) > shape.beam) {
          if (g.row->plan.sampling.greedy()) {
            std::stable_sort(next.begin(), next.end(), [&](int32_t a, int32_t b) {
              return g.path_prob[static_cast<size_t>(a)] > g.path_prob[static_cast<size_t>(b)];
            });
          }
          next.resize(static_cast<size_t>(shape.beam));
          std::sort(next.begin(), next.end());
        }
        std::vector<bool> parent_taken(g.frontier.size(), false);
        std::vector<int32_t> expanded;
        for (int32_t node : next) {
          const int32_t parent = g.row->parents[static_cast<size_t>(node)];
          const size_t e =
              static_cast<size_t>(std::find(g.frontier.begin(), g.frontier.end(), parent) - g.frontier.begin());
          if (!parent_taken[e]) {
            next_branch.push_back(g.branch[e]);
          } else if (g.spare_used < g.layout->spare.size()) {
            const int32_t branch = g.layout->spare[g.spare_used++];
            start_path(g, g.branch[e], branch);
            next_branch.push_back(branch);
          } else {
            continue;  // no blocks for another path: the node stays a leaf
          }
          parent_taken[e] = true;
          expanded.push_back(node);
        }
        next = std::move(expanded);
      }
      g.frontier = std::move(next);
      g.branch = std::move(next_branch);
    }
    if (widest <= kDraftStepFeed) times.push_back({static_cast<int32_t>(segments.size()), seconds_since(step_start)});
    ++steps;
  }
  for (Growing& g : trees) {
    keep_most_probable(g, g.row->plan.tree.nodes);
    // A grammar may leave fewer levels than planned: K is the depth drafted.
    DraftedRow& row = *g.row;
    if (row.plan.grammar)
      row.plan.k = row.drafts.empty() ? 0 : row.depth_of(static_cast<int32_t>(row.drafts.size()) - 1);
    for (auto& [slot, fed] : g.fed) kept.push_back({slot, std::move(fed)});
  }
  return steps;
}

void Drafter::prefill(std::span<const DraftPrefill> prompts, const DraftPrefillLayout& layout) {
  if (prompts.empty() || !model_) return;
  torch::InferenceMode inference;
  apply_copies(layout.tables, *storage_);
  std::vector<ForwardSegment> segments;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const DraftPrefill& p = prompts[i];
    const int64_t keep = layout.keep[i], end = p.chunk_end();
    if (keep >= end) continue;
    segments.push_back(
        {std::span<const int32_t>(p.prompt).subspan(static_cast<size_t>(keep), static_cast<size_t>(end - keep)),
         p.draft_slot, LogitsFor::last_position});
  }
  if (segments.empty()) return;
  model_->forward(segments, layout.tables, *storage_);
}

}  // namespace specd
