#include "engine/speculation/prompt_lookup.hpp"

#include <algorithm>
#include <optional>
#include <string>

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
