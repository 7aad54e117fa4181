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

// Sets every logit of `row` (float32, contiguous, [vocab]) that `state` does not allow
// to -inf. False, and `row` unchanged, when it allows none (the grammar is done and
// takes no EOS).
bool mask_in_place(at::Tensor& row, grammar::GrammarMatcher& state);
// The same on a float32 copy of one row of logits; nullopt when the state allows none.
std::optional<at::Tensor> grammar_masked(const at::Tensor& logits, grammar::GrammarMatcher& state);

// The matcher's state after each node of a tree (nodes level by level, parents[i] < i,
// -1 the root): nullopt for a node whose token the grammar refuses (it cannot be
// accepted: its masked probability is 0), and for everything under one.
std::vector<std::optional<grammar::GrammarMatcher>> grammar_states(const grammar::GrammarMatcher& root,
                                                                   std::span<const int32_t> tokens,
                                                                   std::span<const int32_t> parents);

}  // namespace specd
