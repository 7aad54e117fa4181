#pragma once
// A grammar ready for token masks: the byte-level automaton, the vocabulary it is masked
// over, and the per-state token precomputation, with the time each part took.
// Immutable; shared by every request using it (GrammarCache hands out shared_ptrs).
#include <cstddef>
#include <memory>

#include "engine/grammar/byte_grammar.hpp"
#include "engine/grammar/token_mask_table.hpp"
#include "engine/grammar/token_vocabulary.hpp"

namespace specd::grammar {

struct CompiledGrammar {
  CompiledGrammar(std::shared_ptr<const ByteGrammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary);

  // The memory this grammar holds: the automaton and the token precomputation (the
  // vocabulary is the engine's, shared by every grammar, and not counted).
  size_t bytes() const;

  std::shared_ptr<const ByteGrammar> grammar;
  std::shared_ptr<const TokenVocabulary> vocabulary;
  double precompute_seconds = 0;  // declared before masks: the masks' initializer sets it
  TokenMaskTable masks;
};

}  // namespace specd::grammar
