#pragma once
// Structured output inside the round: logits masked to the tokens a grammar allows at a
// matcher's state, for the draft's proposals and the target's verdicts alike (both
// masked, rejection sampling keeps the masked target's distribution exactly).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/grammar/grammar_matcher.hpp"

namespace specd {

// A float32 copy of one row of logits [vocab] with every token `state` does not allow
// set to -inf. Nullopt when it allows none (the grammar is done and takes no EOS).
std::optional<at::Tensor> grammar_masked(const at::Tensor& logits, grammar::GrammarMatcher& state);

// The matcher's state after each node of a tree (nodes level by level, parents[i] < i,
// -1 the root): nullopt for a node whose token the grammar refuses (it cannot be
// accepted: its masked probability is 0), and for everything under one.
std::vector<std::optional<grammar::GrammarMatcher>> grammar_states(const grammar::GrammarMatcher& root,
                                                                   std::span<const int32_t> tokens,
                                                                   std::span<const int32_t> parents);

}  // namespace specd
