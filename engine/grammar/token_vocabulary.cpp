#include "engine/grammar/token_vocabulary.hpp"

#include <algorithm>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes_by_id, std::span<const int32_t> special_ids,
                                 std::span<const int32_t> eos_ids)
    : bytes_(std::move(bytes_by_id)), ordinary_(bytes_.size()), eos_(bytes_.size()) {
  const auto check = [&](int32_t id, const char* what) {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) {
      throw SpecdError(ErrorCode::invalid_argument, std::string(what) + " id " + std::to_string(id) +
                                                        " is outside the vocabulary of " +
                                                        std::to_string(bytes_.size()) + " tokens");
    }
  };
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!bytes_[id].empty()) ordinary_.set(static_cast<int32_t>(id));
  }
  for (const int32_t id : special_ids) {
    check(id, "special token");
    ordinary_.reset(id);
  }
  for (const int32_t id : eos_ids) {
    check(id, "EOS token");
    ordinary_.reset(id);
    eos_.set(id);
    eos_ids_.push_back(id);
  }
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (ordinary_.test(static_cast<int32_t>(id))) sorted_.push_back(static_cast<int32_t>(id));
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    return bytes_[static_cast<size_t>(a)] != bytes_[static_cast<size_t>(b)]
               ? bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)]
               : a < b;
  });
  lcp_.assign(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes_[static_cast<size_t>(sorted_[i - 1])];
    const std::string& b = bytes_[static_cast<size_t>(sorted_[i])];
    uint32_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    lcp_[i] = n;
  }
}

size_t TokenVocabulary::end_of_prefix(size_t from, std::string_view prefix) const {
  const auto it = std::partition_point(sorted_.begin() + static_cast<std::ptrdiff_t>(from), sorted_.end(),
                                       [&](int32_t id) { return bytes(id).starts_with(prefix); });
  return static_cast<size_t>(it - sorted_.begin());
}

TokenVocabulary vocabulary_from_tokenizer(const Tokenizer& tokenizer, std::span<const int32_t> special_ids) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  std::vector<int32_t> specials(special_ids.begin(), special_ids.end());
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    try {
      bytes[static_cast<size_t>(id)] = tokenizer.id_to_piece(id);
    } catch (const SpecdError&) {
      specials.push_back(id);  // an id the tokenizer does not define (a gap in the vocabulary)
    }
  }
  if (tokenizer.bos_id()) specials.push_back(*tokenizer.bos_id());
  return TokenVocabulary(std::move(bytes), specials, tokenizer.eos_ids());
}

std::vector<int32_t> special_ids_from_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  std::vector<int32_t> ids;
  for (const AddedTokenSpec& token : read_bpe_tokenizer_file(tokenizer_json).added_tokens) {
    if (token.special) ids.push_back(token.id);
  }
  return ids;
}

}  // namespace specd::grammar
