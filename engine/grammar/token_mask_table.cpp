#include "engine/grammar/token_mask_table.hpp"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "engine/grammar/grammar_stacks.hpp"

namespace specd::grammar {
namespace {

class NodeClassifier {
 public:
  NodeClassifier(const ByteGrammar& grammar, const TokenVocabulary& vocabulary)
      : vocabulary_(vocabulary), stepper_(grammar, pool_) {}

  NodeTokenMask classify(int32_t node) {
    accepted_.clear();
    uncertain_.clear();
    pool_.clear();
    sets_.clear();
    set_ids_.clear();
    next_.clear();
    loop_bytes_.clear();
    StackSet start;
    start.stacks.assign(1, pool_.push(node, kUnknownBelow));
    walk(0, intern(std::move(start)));
    NodeTokenMask out;
    const std::vector<int32_t>& sorted = vocabulary_.sorted();
    out.lists_rejected = accepted_.size() * 2 > sorted.size();
    if (out.lists_rejected) {
      // Everything but the accepted ones (uncertain ones included: checked at run time).
      size_t next = 0;
      for (uint32_t i = 0; i < sorted.size(); ++i) {
        if (next < accepted_.size() && accepted_[next] == i) {
          ++next;
        } else {
          out.listed.push_back(sorted[i]);
        }
      }
    } else {
      for (const uint32_t i : accepted_) out.listed.push_back(sorted[i]);
    }
    out.uncertain = uncertain_;
    for (size_t k = 0; k < uncertain_.size(); ++k) {
      out.uncertain_lcp.push_back(k == 0 ? 0 : common_prefix(uncertain_[k - 1], uncertain_[k]));
    }
    return out;
  }

 private:
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kDead = -1;

  uint32_t common_prefix(uint32_t a, uint32_t b) const {
    const std::string_view x = vocabulary_.bytes(vocabulary_.sorted()[a]);
    const std::string_view y = vocabulary_.bytes(vocabulary_.sorted()[b]);
    uint32_t n = 0;
    while (n < x.size() && n < y.size() && x[n] == y[n]) ++n;
    return n;
  }

  // Sets of stacks are interned, so a step is computed once per (set, byte): most of
  // the trie is read from a handful of sets (inside a string, one).
  int32_t intern(StackSet set) {
    std::sort(set.stacks.begin(), set.stacks.end());
    std::vector<int32_t> key = set.stacks;
    key.push_back(set.can_end ? 1 : 0);
    auto [it, added] = set_ids_.try_emplace(std::move(key), static_cast<int32_t>(sets_.size()));
    if (added) {
      sets_.push_back(std::move(set));
      next_.resize(next_.size() + 256, kUnknown);
    }
    return it->second;
  }

  // The set after reading `byte` from set `from` (kDead if none), shifted left one bit,
  // with the low bit set when a stack that kept its known frames read it.
  int32_t next(int32_t from, uint8_t byte) {
    int32_t& slot = next_[static_cast<size_t>(from) * 256 + byte];
    if (slot == kUnknown) {
      StackSet to;
      const StackStepper::Step step = stepper_.step(sets_[static_cast<size_t>(from)], byte, to);
      slot = step.consumed ? intern(std::move(to)) * 2 + (step.consumed_known ? 1 : 0) : kDead;
      // intern() may have grown next_: `slot` is rewritten through a fresh reference.
      next_[static_cast<size_t>(from) * 256 + byte] = slot;
    }
    return slot;
  }

  // Depth-first over the token trie: a child whose byte no stack reads prunes its whole
  // subtree (rejected); tokens ending at a live trie node are accepted if a stack that
  // kept its known frames read every byte, else uncertain. Positions come out ascending.
  void walk(int32_t trie_node, int32_t set) {
    const auto& trie = vocabulary_.trie();
    for (int32_t c = trie[static_cast<size_t>(trie_node)].first_child; c >= 0;
         c = trie[static_cast<size_t>(c)].next_sibling) {
      const TokenVocabulary::TrieNode& child = trie[static_cast<size_t>(c)];
      const int32_t result = next(set, child.byte);
      if (result == kDead) continue;
      std::vector<uint32_t>& bucket = (result & 1) != 0 ? accepted_ : uncertain_;
      if (result == set * 2 + 1 && child.end - child.begin >= kLoopCheckTokens &&
          loops_on(set, vocabulary_.bytes_below(c))) {
        // Inside a string: every byte below leads back to the same set, so every token
        // below is accepted without walking it.
        for (uint32_t i = child.begin; i < child.end; ++i) bucket.push_back(i);
        continue;
      }
      for (uint32_t i = child.begin; i < child.terminal_end; ++i) bucket.push_back(i);
      walk(c, result >> 1);
    }
  }

  // Whether every byte of `bytes` leads from `set` back to itself through known frames
  // (the set's loop bytes are computed once, the first time it loops on some byte).
  bool loops_on(int32_t set, const TokenVocabulary::ByteMask& bytes) {
    if (loop_bytes_.size() <= static_cast<size_t>(set)) loop_bytes_.resize(sets_.size());
    auto& [known, loop] = loop_bytes_[static_cast<size_t>(set)];
    if (!known) {
      known = true;
      for (int b = 0; b < 256; ++b) {
        if (next(set, static_cast<uint8_t>(b)) == set * 2 + 1)
          loop[static_cast<size_t>(b) >> 6] |= uint64_t{1} << (b & 63);
      }
    }
    for (size_t w = 0; w < 4; ++w) {
      if ((bytes[w] & ~loop[w]) != 0) return false;
    }
    return true;
  }

  // Subtrees smaller than this are walked: checking their bytes would cost as much.
  static constexpr uint32_t kLoopCheckTokens = 2;

  struct KeyHash {
    size_t operator()(const std::vector<int32_t>& v) const {
      size_t h = v.size();
      for (const int32_t x : v) h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(x);
      return h;
    }
  };

  const TokenVocabulary& vocabulary_;
  StackPool pool_;
  StackStepper stepper_;
  std::vector<StackSet> sets_;
  std::unordered_map<std::vector<int32_t>, int32_t, KeyHash> set_ids_;
  std::vector<int32_t> next_;                                           // per interned set, 256 entries
  std::vector<std::pair<bool, TokenVocabulary::ByteMask>> loop_bytes_;  // per interned set
  std::vector<uint32_t> accepted_;                                      // sorted positions
  std::vector<uint32_t> uncertain_;                                     // sorted positions
};

}  // namespace

TokenMaskTable::TokenMaskTable(const ByteGrammar& grammar, const TokenVocabulary& vocabulary)
    : slot_of_node_(grammar.nodes.size(), -1) {
  NodeClassifier classifier(grammar, vocabulary);
  for (size_t id = 0; id < grammar.nodes.size(); ++id) {
    const GrammarNode& n = grammar.nodes[id];
    if (!n.reachable || n.bytes.empty()) continue;
    slot_of_node_[id] = static_cast<int32_t>(masks_.size());
    masks_.push_back(classifier.classify(static_cast<int32_t>(id)));
  }
}

size_t TokenMaskTable::bytes() const {
  size_t n = sizeof(*this) + slot_of_node_.capacity() * sizeof(int32_t) + masks_.capacity() * sizeof(NodeTokenMask);
  for (const NodeTokenMask& m : masks_) {
    n += m.listed.capacity() * sizeof(int32_t) +
         (m.uncertain.capacity() + m.uncertain_lcp.capacity()) * sizeof(uint32_t);
  }
  return n;
}

size_t TokenMaskTable::uncertain_total() const {
  size_t n = 0;
  for (const NodeTokenMask& m : masks_) n += m.uncertain.size();
  return n;
}

}  // namespace specd::grammar
