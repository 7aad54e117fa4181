#include "engine/speculation/grammar_mask.hpp"

#include <ATen/ATen.h>

namespace specd {

bool mask_in_place(at::Tensor& row, grammar::GrammarMatcher& state) {
  thread_local grammar::TokenBitset allowed;
  state.fill_mask(allowed);
  if (allowed.count() == 0) return false;
  grammar::mask_logits(std::span<float>(row.data_ptr<float>(), static_cast<size_t>(row.numel())), allowed);
  return true;
}

std::optional<at::Tensor> grammar_masked(const at::Tensor& logits, grammar::GrammarMatcher& state) {
  at::Tensor out = logits.to(at::kFloat).contiguous().clone();
  if (!mask_in_place(out, state)) return std::nullopt;
  return out;
}

std::vector<std::optional<grammar::GrammarMatcher>> grammar_states(const grammar::GrammarMatcher& root,
                                                                   std::span<const int32_t> tokens,
                                                                   std::span<const int32_t> parents) {
  std::vector<std::optional<grammar::GrammarMatcher>> states(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t parent = parents[i];
    const grammar::GrammarMatcher* from =
        parent < 0 ? &root : (states[static_cast<size_t>(parent)] ? &*states[static_cast<size_t>(parent)] : nullptr);
    if (!from) continue;
    grammar::GrammarMatcher next = *from;
    if (next.accept_token(tokens[i])) states[i] = std::move(next);
  }
  return states;
}

}  // namespace specd
