#include "engine/grammar/token_mask_table.hpp"

#include <algorithm>

#include "engine/grammar/grammar_stacks.hpp"

namespace specd::grammar {
namespace {

enum class TokenClass : uint8_t { accepted, rejected, uncertain };

class NodeClassifier {
 public:
  NodeClassifier(const ByteGrammar& grammar, const TokenVocabulary& vocabulary)
      : grammar_(grammar), vocabulary_(vocabulary), stepper_(grammar, pool_) {
    size_t longest = 0;
    for (const int32_t id : vocabulary.sorted()) longest = std::max(longest, vocabulary.bytes(id).size());
    states_.resize(longest + 1);
    classes_.resize(vocabulary.sorted().size());
  }

  NodeTokenMask classify(int32_t node) {
    walk(node);
    NodeTokenMask out;
    size_t accepted = 0;
    for (const TokenClass c : classes_) accepted += c == TokenClass::accepted ? 1 : 0;
    const size_t rejected = classes_.size() - accepted;  // uncertain ones too: listed below
    out.lists_rejected = rejected < accepted;
    const std::vector<int32_t>& sorted = vocabulary_.sorted();
    uint32_t run_lcp = 0;  // min lcp since the previous uncertain token
    for (size_t i = 0; i < classes_.size(); ++i) {
      run_lcp = std::min(run_lcp, vocabulary_.lcp(i));
      const TokenClass c = classes_[i];
      if (c == TokenClass::uncertain) {
        out.uncertain.push_back(static_cast<uint32_t>(i));
        out.uncertain_lcp.push_back(out.uncertain.size() == 1 ? 0 : run_lcp);
        run_lcp = UINT32_MAX;
      }
      if (out.lists_rejected ? c != TokenClass::accepted : c == TokenClass::accepted) out.listed.push_back(sorted[i]);
    }
    std::sort(out.listed.begin(), out.listed.end());
    return out;
  }

 private:
  // Walks the sorted tokens from a stack whose top is `node`, reusing the states of the
  // previous token's common prefix and skipping every token under a dead prefix.
  void walk(int32_t node) {
    pool_.clear();
    states_[0].stacks.assign(1, pool_.push(node, kUnknownBelow));
    states_[0].can_end = false;
    const std::vector<int32_t>& sorted = vocabulary_.sorted();
    size_t valid = 0;  // states_[0..valid] follow the previous token's bytes
    for (size_t i = 0; i < sorted.size();) {
      const std::string_view bytes = vocabulary_.bytes(sorted[i]);
      size_t depth = std::min<size_t>(vocabulary_.lcp(i), valid);
      bool known = depth > 0 ? known_[depth] : true;
      bool dead = false;
      for (; depth < bytes.size(); ++depth) {
        const StackStepper::Step step =
            stepper_.step(states_[depth], static_cast<uint8_t>(bytes[depth]), states_[depth + 1]);
        if (!step.consumed) {
          dead = true;
          break;
        }
        known = step.consumed_known;
        if (known_.size() <= depth + 1) known_.resize(depth + 2);
        known_[depth + 1] = known;
      }
      if (dead) {
        valid = depth;
        const size_t end = vocabulary_.end_of_prefix(i, bytes.substr(0, depth + 1));
        std::fill(classes_.begin() + static_cast<std::ptrdiff_t>(i),
                  classes_.begin() + static_cast<std::ptrdiff_t>(end), TokenClass::rejected);
        i = end;
        continue;
      }
      valid = bytes.size();
      classes_[i] = known ? TokenClass::accepted : TokenClass::uncertain;
      ++i;
    }
  }

  const ByteGrammar& grammar_;
  const TokenVocabulary& vocabulary_;
  StackPool pool_;
  StackStepper stepper_;
  std::vector<StackSet> states_;
  std::vector<bool> known_;
  std::vector<TokenClass> classes_;
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

size_t TokenMaskTable::uncertain_total() const {
  size_t n = 0;
  for (const NodeTokenMask& m : masks_) n += m.uncertain.size();
  return n;
}

}  // namespace specd::grammar
