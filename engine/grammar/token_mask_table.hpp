#pragma once
// The per-state token precomputation that makes masks cheap (the idea of xgrammar's
// adaptive token mask cache). For every reachable node that reads bytes, each ordinary
// token is walked from a stack whose top is that node and whose lower frames are unknown:
// - accepted: some path reads all its bytes without leaving the node's rule instance, so
//   it is legal under any stack;
// - rejected: no path reads it even when the rule is allowed to return to every one of
//   its call sites (an over-approximation of every possible stack);
// - uncertain: only paths through an unknown caller read it; the matcher checks these
//   against the live stack.
// The accepted or the rejected ids are stored, whichever list is shorter. Immutable after
// construction; any thread.
#include <cstdint>
#include <vector>

#include "engine/grammar/byte_grammar.hpp"
#include "engine/grammar/token_vocabulary.hpp"

namespace specd::grammar {

struct NodeTokenMask {
  bool lists_rejected = false;  // `listed` holds the rejected ids, else the accepted ones
  std::vector<int32_t> listed;
  std::vector<uint32_t> uncertain;      // positions in TokenVocabulary::sorted(), ascending
  std::vector<uint32_t> uncertain_lcp;  // common prefix with the previous uncertain token
};

class TokenMaskTable {
 public:
  TokenMaskTable(const ByteGrammar& grammar, const TokenVocabulary& vocabulary);

  // Null for nodes that read no bytes or cannot be reached.
  const NodeTokenMask* node(int32_t id) const {
    const int32_t slot = slot_of_node_[static_cast<size_t>(id)];
    return slot < 0 ? nullptr : &masks_[static_cast<size_t>(slot)];
  }
  size_t node_count() const { return masks_.size(); }
  size_t uncertain_total() const;
  // The memory the table holds (its vectors' capacities included).
  size_t bytes() const;

 private:
  std::vector<int32_t> slot_of_node_;
  std::vector<NodeTokenMask> masks_;
};

}  // namespace specd::grammar
