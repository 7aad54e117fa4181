#pragma once
// Prompt lookup decoding: a model-free drafter. When the text being generated repeats
// something already in the context (code edits, quoting, summaries), the tokens that
// followed the last n-gram's previous occurrence are a cheap, often accepted, draft.
// Pure function of its arguments; safe to call from any thread.
#include <cstdint>
#include <span>
#include <vector>

namespace specd {

// Proposes up to k draft tokens for `context` (prompt + everything generated so far).
// For n from max_ngram down to min_ngram: finds the most recent earlier occurrence of the
// context's last n tokens (an occurrence starting before the suffix itself; it may overlap
// the suffix) and returns the up to k tokens that followed it, fewer when the context ends
// first. The first n that matches wins, so longer n-grams are preferred. Empty when no
// n-gram matches, when k == 0, or when the context is too short for any n.
// Cost: one backward scan per n that stops at the first hit; O(context.size() * n) token
// compares in the worst case, about one per position in practice. With max_ngram 3 an 8k
// context costs at most ~50k compares per call (microseconds).
// Throws SpecdError(invalid_argument) for k < 0, min_ngram < 1 or max_ngram < min_ngram.
std::vector<int32_t> propose_by_lookup(std::span<const int32_t> context, int32_t k, int32_t max_ngram = 3,
                                       int32_t min_ngram = 1);

// A draft tree from up to `continuations` earlier occurrences (the most recent first, the
// longest n-gram first), each continuation up to k tokens, merged by their common
// prefixes (seed 004's prefix tree). Node i holds tokens[i] under parents[i] (-1: the
// context's last token), parents[i] < i; the first continuation is the chain
// propose_by_lookup gives. Same errors as propose_by_lookup; continuations >= 1.
struct LookupTree {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
};
LookupTree propose_tree_by_lookup(std::span<const int32_t> context, int32_t k, int32_t continuations,
                                  int32_t max_ngram = 3, int32_t min_ngram = 1);

}  // namespace specd
