#pragma once
// The compiled form every grammar (GBNF, JSON Schema, any JSON object) ends up in: rules
// whose bodies are byte-level automata without epsilon moves. A node has byte-range
// edges, call edges (enter a rule, continue at a return node when it ends) and may be
// final (its rule can return there). A matcher's state is a set of stacks of nodes: the
// top is where bytes are read, the nodes below are return points. Immutable after
// GrammarBuilder::finish(); shared by every request using the grammar, from any thread.
#include <cstdint>
#include <string>
#include <vector>

namespace specd::grammar {

struct ByteEdge {
  uint8_t lo;
  uint8_t hi;  // inclusive
  int32_t target;
};

struct CallEdge {
  int32_t rule;
  int32_t target;  // the node the caller continues at after the rule returns
};

struct GrammarNode {
  std::vector<ByteEdge> bytes;  // sorted by lo
  std::vector<CallEdge> calls;
  bool final = false;
  bool reachable = false;  // from the root rule's start
  int32_t rule = -1;
};

struct GrammarRule {
  std::string name;
  int32_t start = -1;
  std::vector<int32_t> return_nodes;  // targets of every call edge into this rule
};

struct ByteGrammar {
  std::vector<GrammarNode> nodes;
  std::vector<GrammarRule> rules;
  int32_t root_rule = 0;

  int32_t root_start() const { return rules[static_cast<size_t>(root_rule)].start; }
  const GrammarNode& node(int32_t id) const { return nodes[static_cast<size_t>(id)]; }
};

}  // namespace specd::grammar
