#include "engine/grammar/compiled_grammar.hpp"

#include <chrono>

namespace specd::grammar {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

size_t automaton_bytes(const ByteGrammar& g) {
  size_t n = sizeof(g) + g.nodes.capacity() * sizeof(GrammarNode) + g.rules.capacity() * sizeof(GrammarRule);
  for (const GrammarNode& node : g.nodes)
    n += node.bytes.capacity() * sizeof(ByteEdge) + node.calls.capacity() * sizeof(CallEdge);
  for (const GrammarRule& rule : g.rules) n += rule.name.capacity() + rule.return_nodes.capacity() * sizeof(int32_t);
  return n;
}

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const ByteGrammar> grammar_in,
                                 std::shared_ptr<const TokenVocabulary> vocabulary_in)
    : grammar(std::move(grammar_in)), vocabulary(std::move(vocabulary_in)), masks([this] {
        const auto start = std::chrono::steady_clock::now();
        TokenMaskTable table(*grammar, *vocabulary);
        precompute_seconds = seconds_since(start);
        return table;
      }()) {}

size_t CompiledGrammar::bytes() const { return sizeof(*this) + automaton_bytes(*grammar) + masks.bytes(); }

}  // namespace specd::grammar
