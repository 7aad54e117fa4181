#include "engine/speculation/prompt_lookup.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

// Start of the most recent occurrence of the last n tokens that begins before the suffix
// itself, scanning backwards so the first hit is the most recent one.
std::optional<size_t> find_earlier_ngram(std::span<const int32_t> context, size_t n) {
  const size_t suffix_start = context.size() - n;
  const auto suffix = context.subspan(suffix_start);
  for (size_t start = suffix_start; start-- > 0;) {
    // The last token differs most often between candidates; checking it first keeps
    // the typical cost at one compare per position.
    if (context[start + n - 1] != suffix[n - 1]) continue;
    if (std::equal(suffix.begin(), suffix.end() - 1, context.begin() + start)) return start;
  }
  return std::nullopt;
}

}  // namespace

LookupTree propose_tree_by_lookup(std::span<const int32_t> context, int32_t k, int32_t continuations, int32_t max_ngram,
                                  int32_t min_ngram) {
  LookupTree tree;
  if (continuations < 1) throw SpecdError(ErrorCode::invalid_argument, "prompt lookup: continuations must be >= 1");
  const std::vector<int32_t> first = propose_by_lookup(context, k, max_ngram, min_ngram);
  if (first.empty()) return tree;
  // Every occurrence of the longest matching n-gram and then of shorter ones, newest
  // first, until enough distinct continuations are found.
  std::vector<std::vector<int32_t>> found{first};
  for (int32_t n = max_ngram; n >= min_ngram && static_cast<int32_t>(found.size()) < continuations; --n) {
    const auto len = static_cast<size_t>(n);
    if (context.size() <= len) continue;
    const auto suffix = context.subspan(context.size() - len);
    for (size_t start = context.size() - len; start-- > 0 && static_cast<int32_t>(found.size()) < continuations;) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + start)) continue;
      const size_t from = start + len;
      std::vector<int32_t> next(context.begin() + from,
                                context.begin() + std::min(context.size(), from + static_cast<size_t>(k)));
      if (std::find(found.begin(), found.end(), next) == found.end()) found.push_back(std::move(next));
    }
  }
  // Merge into a prefix tree, nodes numbered level by level.
  struct Trie {
    int32_t token, parent;
  };
  std::vector<Trie> trie;
  for (const std::vector<int32_t>& path : found) {
    int32_t at = -1;
    for (int32_t token : path) {
      int32_t child = -1;
      for (size_t i = 0; i < trie.size() && child < 0; ++i) {
        if (trie[i].parent == at && trie[i].token == token) child = static_cast<int32_t>(i);
      }
      if (child < 0) {
        child = static_cast<int32_t>(trie.size());
        trie.push_back({token, at});
      }
      at = child;
    }
  }
  std::vector<int32_t> depth(trie.size()), order(trie.size()), renumbered(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) {
    depth[i] = trie[i].parent < 0 ? 1 : depth[static_cast<size_t>(trie[i].parent)] + 1;
    order[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return depth[a] < depth[b]; });
  for (size_t i = 0; i < order.size(); ++i) renumbered[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  for (int32_t i : order) {
    tree.tokens.push_back(trie[i].token);
    tree.parents.push_back(trie[i].parent < 0 ? -1 : renumbered[static_cast<size_t>(trie[i].parent)]);
  }
  return tree;
}

std::vector<int32_t> propose_by_lookup(std::span<const int32_t> context, int32_t k, int32_t max_ngram,
                                       int32_t min_ngram) {
  if (k < 0) throw SpecdError(ErrorCode::invalid_argument, "prompt lookup: k must be >= 0");
  if (min_ngram < 1 || max_ngram < min_ngram) {
    throw SpecdError(ErrorCode::invalid_argument,
                     "prompt lookup: need 1 <= min_ngram <= max_ngram, got min_ngram=" + std::to_string(min_ngram) +
                         " max_ngram=" + std::to_string(max_ngram));
  }
  if (k == 0) return {};
  for (int32_t n = max_ngram; n >= min_ngram; --n) {
    const auto len = static_cast<size_t>(n);
    // An earlier occurrence needs at least one token before the suffix.
    if (context.size() <= len) continue;
    const auto start = find_earlier_ngram(context, len);
    if (!start) continue;
    const size_t from = *start + len;  // < context.size(): the match starts before the suffix
    const size_t to = std::min(context.size(), from + static_cast<size_t>(k));
    return {context.begin() + from, context.begin() + to};
  }
  return {};
}

}  // namespace specd
