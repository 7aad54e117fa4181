#include "engine/speculation/draft_layout.hpp"

#include <algorithm>

#include "engine/base/errors.hpp"
#include "engine/model/kv_ledger.hpp"

namespace specd {

namespace {

// A slot that drafted a tree holds its first path and has a branch per other path: the
// one that shares most with `context` becomes the slot's, the others are dropped.
void keep_best_branch(KvLedger& ledger, int32_t slot, std::span<const int32_t> context) {
  const std::vector<int32_t> branches = ledger.branches_of(slot);
  if (branches.empty()) return;
  auto shared = [&](int32_t id) {
    const std::vector<int32_t>& f = ledger.fed(id);
    return std::mismatch(f.begin(), f.end(), context.begin(), context.end()).first - f.begin();
  };
  int32_t best = slot;
  for (int32_t branch : branches) {
    if (shared(branch) > shared(best)) best = branch;
  }
  for (int32_t branch : branches) {
    if (branch != best) ledger.drop(branch);
  }
  if (best != slot) ledger.adopt(slot, best);
}

// Cuts the slot back to the longest prefix of `context` it holds (an empty slot maps
// what the prefix cache holds of it) and commits it; returns its length, at most
// context.size() - 1 (the last token is always fed: its logits give the first draft).
int64_t keep_common_prefix(KvLedger& ledger, int32_t slot, std::span<const int32_t> context) {
  keep_best_branch(ledger, slot, context);
  std::vector<int32_t>& fed = ledger.fed(slot);
  const auto most = static_cast<int64_t>(context.size()) - 1;
  int64_t keep = 0;
  if (fed.empty()) {
    ledger.release(slot);  // map_prefix wants it empty
    keep = std::min(ledger.map_prefix(slot, context), most);
    ledger.fed(slot).assign(context.begin(), context.begin() + keep);
  } else {
    const auto shared = std::mismatch(fed.begin(), fed.end(), context.begin(), context.end());
    keep = std::min<int64_t>(shared.first - fed.begin(), most);
  }
  ledger.truncate_to(slot, keep);
  ledger.commit(slot, context.first(static_cast<size_t>(keep)));
  return keep;
}

// The most branches a tree of `shape` and depth k grows at once besides its first path:
// at each level but the last, the nodes expanded (at most `beam`) less the parents they
// come from (each gives at most its width of them).
int32_t tree_forks(const TreeShape& shape, int32_t k) {
  if (shape.widths.empty()) return 0;
  int64_t frontier = 1, forks = 0;
  for (int32_t level = 0; level + 1 < k && level < static_cast<int32_t>(shape.widths.size()); ++level) {
    const int64_t width = std::max(1, shape.widths[static_cast<size_t>(level)]);
    int64_t next = frontier * width;
    if (shape.beam > 0) next = std::min<int64_t>(next, shape.beam);
    forks += next - (next + width - 1) / width;
    frontier = next;
  }
  return static_cast<int32_t>(std::min<int64_t>(forks, 1 << 16));
}

}  // namespace

DraftPrefillLayout lay_out_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts) {
  DraftPrefillLayout layout;
  std::vector<int32_t> slots;
  try {
    for (const DraftPrefill& p : prompts) {
      const int64_t end = p.chunk_end();
      // What the slot or the prefix cache holds of the prompt, up to the chunk's end (the
      // prompt's last token is always computed: keep_common_prefix keeps one back).
      const auto upto = std::min(static_cast<size_t>(end) + 1, p.prompt.size());
      const int64_t keep = keep_common_prefix(ledger, p.draft_slot, std::span<const int32_t>(p.prompt).first(upto));
      layout.keep.push_back(keep);
      if (keep < end) ledger.reserve(p.draft_slot, end);
      slots.push_back(p.draft_slot);
    }
  } catch (...) {
    for (size_t i = 0; i < layout.keep.size(); ++i) ledger.truncate_to(prompts[i].draft_slot, layout.keep[i]);
    throw;
  }
  if (!slots.empty()) layout.tables = tables_of(ledger, slots);  // else the copies stay for the next job
  return layout;
}

void keep_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts) {
  for (const DraftPrefill& p : prompts) {
    const std::span<const int32_t> wanted =
        std::span<const int32_t>(p.prompt).first(static_cast<size_t>(p.chunk_end()));
    ledger.set_length(p.draft_slot, static_cast<int64_t>(wanted.size()));
    ledger.fed(p.draft_slot).assign(wanted.begin(), wanted.end());
    ledger.commit(p.draft_slot, wanted);
  }
}

void drop_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts, const DraftPrefillLayout& layout) {
  for (size_t i = 0; i < layout.keep.size(); ++i) ledger.truncate_to(prompts[i].draft_slot, layout.keep[i]);
}

ProposalLayout lay_out_proposal(KvLedger* ledger, const RoundPlan& plan) {
  ProposalLayout layout;
  layout.rows.resize(plan.rows.size());
  if (!ledger) return layout;
  std::vector<int32_t> slots;
  try {
    // Each model row's slot cut and given its context's blocks: the branches share the
    // full ones (the first step writes them once for all).
    std::vector<size_t> drafting;
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const RowPlan& row = plan.rows[i];
      if (row.k == 0 || row.drafter != DrafterKind::model || row.draft_slot < 0) continue;
      DraftRowLayout& r = layout.rows[i];
      r.from = keep_common_prefix(*ledger, row.draft_slot, row.context);
      r.slot = row.draft_slot;
      ledger->set_length(r.slot, static_cast<int64_t>(row.context.size()));
      drafting.push_back(i);
    }
    // The deepest node is fed at the context's length + k - 2; a path past the context
    // takes that many blocks and a copy of the partial one. Every row's own path comes
    // first, then trees take branches while the pool has blocks for them.
    auto reach = [&](size_t i) {
      return static_cast<int64_t>(plan.rows[i].context.size()) + std::max(0, plan.rows[i].k - 1);
    };
    auto path_blocks = [&](size_t i) {
      return ledger->blocks_covering(reach(i)) -
             ledger->blocks_covering(static_cast<int64_t>(plan.rows[i].context.size())) + 1;
    };
    int64_t spare = ledger->available_blocks();
    for (size_t i : drafting) spare -= path_blocks(i);
    for (size_t i : drafting) {
      DraftRowLayout& r = layout.rows[i];
      const int32_t forks = tree_forks(plan.rows[i].tree, plan.rows[i].k);
      for (int32_t b = 0; b < forks && spare >= path_blocks(i); ++b) {
        const int32_t branch = ledger->fork(r.slot);
        r.spare.push_back(branch);
        ledger->reserve(branch, reach(i));
        slots.push_back(branch);
        spare -= path_blocks(i);
      }
      ledger->reserve(r.slot, reach(i));
      slots.push_back(r.slot);
    }
  } catch (...) {
    drop_proposal(ledger, layout);
    throw;
  }
  if (slots.empty()) return layout;  // no job on the lane: the copies stay for the next
  layout.tables = tables_of(*ledger, slots);
  for (const DraftRowLayout& r : layout.rows) {
    if (r.slot >= 0) layout.tables.at(r.slot).length = r.from;  // the first step writes the rest
  }
  return layout;
}

void keep_proposal(KvLedger* ledger, const ProposalLayout& layout, std::span<const DraftKept> kept) {
  if (!ledger) return;
  std::vector<int32_t> used;
  for (const DraftKept& k : kept) {
    const auto length = static_cast<int64_t>(k.fed.size());
    ledger->set_length(k.slot, length);
    ledger->truncate_to(k.slot, length);  // the blocks a shallower path did not reach
    ledger->fed(k.slot) = k.fed;
    used.push_back(k.slot);
  }
  for (const DraftRowLayout& r : layout.rows) {
    for (int32_t branch : r.spare) {
      if (std::find(used.begin(), used.end(), branch) == used.end()) ledger->drop(branch);
    }
  }
}

void drop_proposal(KvLedger* ledger, const ProposalLayout& layout) {
  if (!ledger) return;
  for (const DraftRowLayout& r : layout.rows) {
    if (r.slot < 0) continue;
    for (int32_t branch : r.spare) ledger->drop(branch);
    ledger->truncate_to(r.slot, std::min(r.from, ledger->length(r.slot)));
  }
}

}  // namespace specd
