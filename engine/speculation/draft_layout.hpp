#pragma once
// The KV side of the draft model's work in a round, decided by the owner of the draft's
// KvLedger around it (the engine's CacheManager; Drafter's single-thread forms where one
// thread owns everything). A draft slot holds the longest prefix of its request's
// context that it was fed (KvLedger::fed): before a prefill or a proposal the slot is cut
// back to what it shares with the new context (after a token tree, the branch holding
// the accepted path first becomes the slot's), and what it lacks is fed. A proposal's
// slot gets blocks for its K levels, and a token tree as many branches, forked at the
// context's end, as its shape can use at once; afterwards each keeps what it was fed
// and the unused branches go. The lane only reads the tables and writes the storage.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/kv_tables.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class KvLedger;

// One prompt for the draft's prefill, by value: prompt[0, end) should be in the slot.
struct DraftPrefill {
  int32_t draft_slot;
  std::vector<int32_t> prompt;
  int64_t end = -1;  // -1: the prompt's end
  int64_t chunk_end() const { return end < 0 ? static_cast<int64_t>(prompt.size()) : end; }
};

struct DraftPrefillLayout {
  std::vector<int64_t> keep;  // per prompt: the tokens its slot keeps (the rest is fed)
  KvTables tables;
};

// Each slot cut to what it shares with its prompt (an emptied slot maps the prefix
// cache), blocks for the rest up to the chunk's end. Throws SpecdError(out_of_capacity).
DraftPrefillLayout lay_out_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts);
// After the prefill: each slot holds its prompt to the chunk's end, committed.
void keep_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts);
// A prefill that failed: each slot back to what it kept.
void drop_draft_prefill(KvLedger& ledger, std::span<const DraftPrefill> prompts, const DraftPrefillLayout& layout);

// One row of a proposal on the draft model.
struct DraftRowLayout {
  int32_t slot = -1;           // -1: the row does not run the draft model this round
  int64_t from = 0;            // context tokens the slot keeps; its first step feeds the rest
  std::vector<int32_t> spare;  // branches forked at the context's end, for a tree's other paths
};

struct ProposalLayout {
  std::vector<DraftRowLayout> rows;  // one per plan row
  KvTables tables;                   // every slot and branch (a slot's length is its `from`)
};

// The rows that draft with the draft model (a draft slot, K > 0) get their slots cut and
// their blocks; `ledger` is null without a draft model. A tree gets at most the branches
// the pool can hold besides its chain. Throws SpecdError(out_of_capacity) with every
// slot as it was cut.
ProposalLayout lay_out_proposal(KvLedger* ledger, const RoundPlan& plan);
// After the proposal: each slot and used branch holds what it was fed (RoundDrafts::kept);
// the spare branches no path used are dropped. A slot keeps its branches to the next
// round, where the one holding the accepted path becomes the slot's.
void keep_proposal(KvLedger* ledger, const ProposalLayout& layout, std::span<const DraftKept> kept);
// A proposal that failed: its branches go, each slot back to what it kept.
void drop_proposal(KvLedger* ledger, const ProposalLayout& layout);

}  // namespace specd
