#pragma once
// One bit per token id: the allowed tokens of a mask. Plain value; any thread.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace specd::grammar {

class TokenBitset {
 public:
  TokenBitset() = default;
  explicit TokenBitset(size_t size) : words_((size + 63) / 64, 0), size_(size) {}

  size_t size() const { return size_; }
  bool test(int32_t id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u; }
  void set(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  void reset(int32_t id) { words_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63)); }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  void resize(size_t size) {
    words_.assign((size + 63) / 64, 0);
    size_ = size;
  }
  size_t count() const {
    size_t n = 0;
    for (const uint64_t w : words_) n += static_cast<size_t>(std::popcount(w));
    return n;
  }
  TokenBitset& operator|=(const TokenBitset& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    return *this;
  }
  bool operator==(const TokenBitset& other) const = default;
  std::vector<uint64_t>& words() { return words_; }
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  std::vector<uint64_t> words_;
  size_t size_ = 0;
};

// Sets every logit whose id the mask does not allow to -infinity (ids past the mask's
// size too: a model's output rows may outnumber the tokenizer's ids).
inline void mask_logits(std::span<float> logits, const TokenBitset& allowed) {
  const std::vector<uint64_t>& words = allowed.words();
  for (size_t i = 0; i < logits.size(); ++i) {
    const bool ok = i < allowed.size() && ((words[i >> 6] >> (i & 63)) & 1u) != 0;
    if (!ok) logits[i] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace specd::grammar
