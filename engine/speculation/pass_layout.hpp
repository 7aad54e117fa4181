#pragma once
// The KV side of a round's target pass, decided by the owner of the target's KvLedger
// around the pass (the engine's CacheManager; Verifier::prefill/verify where one thread
// owns everything): before it, newcomers map their cached prefixes and every row's
// positions get blocks (a token tree a branch per leaf); after it, each drafted row
// keeps the branch of its accepted path and the kept tokens become findable. The pass
// itself (Verifier::pass) only reads the tables it is handed and writes the storage.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/grammar/grammar_matcher.hpp"
#include "engine/model/kv_tables.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvLedger;
struct ForwardRow;

// A newcomer's prompt for the target prefill, by value: prompt[start, end) goes into its
// slot after the `start` tokens already there (earlier chunks). The first chunk
// (start 0) first maps the longest cached prefix of the prompt into the emptied slot and
// moves the chunk past it, keeping its width (map_prefixes sets `cached`, `start` and
// `end` to what it did). The first token is sampled by the chunk that reaches the
// prompt's end, unless `sample` is off (a preempted request resuming: its next token is known).
struct TargetPrefill {
  int32_t target_slot;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  Rng rng{0};
  int64_t start = 0;
  int64_t end = -1;  // -1: the prompt's end
  bool sample = true;
  bool use_prefix_cache = true;                    // the request's cache_prompt
  int64_t cached = 0;                              // set by map_prefixes: prompt tokens the prefix cache held
  std::optional<grammar::GrammarMatcher> grammar;  // structured output: masks the first token
  int64_t chunk_end() const { return end < 0 ? static_cast<int64_t>(prompt.size()) : end; }
  bool completes() const { return chunk_end() == static_cast<int64_t>(prompt.size()); }
};

// One drafted row in the target pass: the root g at the slot's length and each node at
// g's position plus its depth. Every leaf after the first gets a branch of the slot
// (the first uses the slot); a row reads the branch of its first leaf and writes into
// those of all leaves under it, so it sees exactly its path.
struct TreeRows {
  int32_t slot = 0;
  int64_t base = 0;
  std::vector<int32_t> branches;             // forked for this row
  std::vector<std::vector<int32_t>> writes;  // per target row: the slots it writes, its read slot first
};

// The pass's rows of one drafted row (they point into `t`, which must outlive them).
std::vector<ForwardRow> forward_rows(const TreeRows& t, const DraftedRow& row);

struct PassLayout {
  std::vector<TreeRows> trees;  // one per drafted row
  KvTables tables;              // every slot and branch the pass reads or writes
};

// Before a pass with first chunks (start 0): each one's slot is emptied and maps the
// longest cached prefix of its prompt; the chunk moves past it, keeping its width.
void map_prefixes(KvLedger& ledger, std::span<TargetPrefill> chunks);
// Every drafted row's tree and every chunk get blocks for the positions they write; a
// tree whose branches do not fit in the pool shrinks to its first path (the row's drafts
// change). Throws SpecdError(out_of_capacity) with the ledger as it was when the rows do
// not fit even so, or a sequence has no room left.
PassLayout lay_out_pass(KvLedger& ledger, RoundDrafts& drafts, std::span<const TargetPrefill> chunks);
// After the pass: each drafted row keeps the branch of its accepted path (`paths`, node
// numbers, one per row), cut to its context and that path; every chunk's slot holds its
// prompt up to the chunk's end. Kept tokens and chunks are committed to the prefix cache.
void keep_pass(KvLedger& ledger, const PassLayout& layout, const RoundDrafts& drafts,
               std::span<const std::vector<int32_t>> paths, std::span<const TargetPrefill> chunks);
// A pass that failed: the branches go, the slots keep what they held before the layout.
void drop_pass(KvLedger& ledger, const PassLayout& layout);

}  // namespace specd
