#include "engine/grammar/compiled_grammar.hpp"

#include <chrono>

namespace specd::grammar {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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

}  // namespace specd::grammar
