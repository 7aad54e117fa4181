#include "engine/speculation/pass_layout.hpp"

#include <algorithm>

#include "engine/base/errors.hpp"
#include "engine/model/kv_ledger.hpp"
#include "engine/model/native_forward.hpp"

namespace specd {

namespace {

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

std::vector<int32_t> leaves_of(const DraftedRow& row) {
  std::vector<bool> parent(row.drafts.size(), false);
  for (int32_t p : row.parents)
    if (p >= 0) parent[static_cast<size_t>(p)] = true;
  std::vector<int32_t> leaves;
  for (size_t i = 0; i < row.drafts.size(); ++i)
    if (!parent[i]) leaves.push_back(static_cast<int32_t>(i));
  return leaves;
}

// `spare`: blocks of the pool the pass's rows have not yet been counted against; a tree
// whose branches do not fit shrinks to its first path.
TreeRows lay_out(DraftedRow& row, KvLedger& ledger, int64_t& spare) {
  TreeRows t;
  t.slot = row.plan.target_slot;
  t.base = ledger.length(t.slot);
  const int64_t block = ledger.block_size();
  std::vector<int32_t> leaves = leaves_of(row);
  // Each path copies the slot's partial block and takes blocks up to its leaf.
  auto needed = [&] {
    int64_t n = 0;
    for (int32_t leaf : leaves) n += 1 + (t.base % block + row.depth_of(leaf)) / block;
    return n;
  };
  if (leaves.size() > 1 && needed() > spare) {
    keep_first_path(row);
    leaves = leaves_of(row);
  }
  spare -= needed();
  t.writes.resize(row.drafts.size() + 1);
  for (size_t l = 0; l < leaves.size(); ++l) {
    const int32_t slot = l == 0 ? t.slot : ledger.fork(t.slot);
    if (l > 0) t.branches.push_back(slot);
    t.writes[0].push_back(slot);
    for (int32_t n = leaves[l]; n >= 0; n = row.parents[static_cast<size_t>(n)]) {
      t.writes[static_cast<size_t>(n) + 1].push_back(slot);
    }
  }
  if (leaves.empty()) t.writes[0].push_back(t.slot);
  return t;
}

int64_t position_of(const TreeRows& t, const DraftedRow& row, size_t r) {
  return t.base + (r == 0 ? 0 : row.depth_of(static_cast<int32_t>(r) - 1));
}

// After verification: the slot keeps the branch holding the accepted path, cut to the
// context and that path; every other branch is dropped.
void keep_path(KvLedger& ledger, const TreeRows& t, const std::vector<int32_t>& path) {
  const int32_t keep = t.writes[path.empty() ? 0 : static_cast<size_t>(path.back()) + 1].front();
  for (int32_t branch : t.branches) {
    if (branch != keep) ledger.drop(branch);
  }
  if (keep != t.slot) ledger.adopt(t.slot, keep);
  const int64_t length = t.base + static_cast<int64_t>(path.size()) + 1;
  ledger.set_length(t.slot, length);
  ledger.truncate_to(t.slot, length);  // the blocks a deeper leaf took
}

}  // namespace

std::vector<ForwardRow> forward_rows(const TreeRows& t, const DraftedRow& row) {
  std::vector<ForwardRow> rows;
  const int32_t g = row.plan.context.back();
  for (size_t r = 0; r < t.writes.size(); ++r) {
    const std::vector<int32_t>& w = t.writes[r];
    const int32_t token = r == 0 ? g : row.drafts[r - 1];
    rows.push_back({token, w.front(), position_of(t, row, r), std::span<const int32_t>(w).subspan(1)});
  }
  return rows;
}

void map_prefixes(KvLedger& ledger, std::span<TargetPrefill> chunks) {
  for (TargetPrefill& p : chunks) {
    if (p.start != 0) continue;
    ledger.release(p.target_slot);
    p.cached = p.use_prefix_cache ? ledger.map_prefix(p.target_slot, p.prompt) : 0;
    if (p.cached > 0) {
      const int64_t width = p.chunk_end();
      p.start = p.cached;
      p.end = std::min<int64_t>(static_cast<int64_t>(p.prompt.size()), p.cached + width);
    }
  }
}

PassLayout lay_out_pass(KvLedger& ledger, RoundDrafts& drafts, std::span<const TargetPrefill> chunks) {
  PassLayout layout;
  std::vector<int32_t> slots;  // every slot and branch written, in order
  try {
    int64_t spare = ledger.available_blocks();
    for (DraftedRow& row : drafts.rows) {
      if (static_cast<int64_t>(row.plan.context.size()) > ledger.max_seq_len()) {
        throw SpecdError(ErrorCode::out_of_capacity, "speculative round: a sequence has no room left in the KV cache");
      }
      layout.trees.push_back(lay_out(row, ledger, spare));
      const TreeRows& t = layout.trees.back();
      // Each slot written up to its deepest row (rows come in position order).
      for (size_t r = 0; r < t.writes.size(); ++r) {
        for (int32_t slot : t.writes[r]) {
          ledger.reserve(slot, position_of(t, row, r) + 1);
          slots.push_back(slot);
        }
      }
    }
    for (const TargetPrefill& p : chunks) {
      if (ledger.length(p.target_slot) != p.start) ledger.set_length(p.target_slot, p.start);
      ledger.reserve(p.target_slot, p.chunk_end());
      slots.push_back(p.target_slot);
    }
  } catch (...) {
    drop_pass(ledger, layout);
    for (const TargetPrefill& p : chunks) ledger.truncate_to(p.target_slot, ledger.length(p.target_slot));
    throw;
  }
  if (!slots.empty()) layout.tables = tables_of(ledger, slots);  // else the copies stay for the next pass
  return layout;
}

void keep_pass(KvLedger& ledger, const PassLayout& layout, const RoundDrafts& drafts,
               std::span<const std::vector<int32_t>> paths, std::span<const TargetPrefill> chunks) {
  for (size_t b = 0; b < drafts.rows.size(); ++b) {
    const DraftedRow& row = drafts.rows[b];
    const std::vector<int32_t>& path = paths[b];
    keep_path(ledger, layout.trees[b], path);
    // The slot now holds the context and the accepted path: all of it kept.
    std::vector<int32_t> kept = row.plan.context;
    for (int32_t node : path) kept.push_back(row.drafts[static_cast<size_t>(node)]);
    ledger.commit(row.plan.target_slot, kept);
  }
  for (const TargetPrefill& p : chunks) {
    ledger.set_length(p.target_slot, p.chunk_end());
    ledger.commit(p.target_slot, std::span<const int32_t>(p.prompt).first(static_cast<size_t>(p.chunk_end())));
  }
}

void drop_pass(KvLedger& ledger, const PassLayout& layout) {
  for (const TreeRows& t : layout.trees) {
    for (int32_t branch : t.branches) ledger.drop(branch);
    ledger.truncate_to(t.slot, ledger.length(t.slot));
  }
}

}  // namespace specd
