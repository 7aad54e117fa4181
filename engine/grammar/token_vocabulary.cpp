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
  build_trie();
}

void TokenVocabulary::build_trie() {
  trie_.assign(1, TrieNode{});
  std::vector<int32_t> path{0};  // path[d]: the node of the current token's first d bytes
  std::vector<int32_t> last_child{-1};
  for (size_t i = 0; i < sorted_.size(); ++i) {
    const std::string_view b = bytes(sorted_[i]);
    const size_t keep = std::min<size_t>(lcp_[i], b.size());
    path.resize(keep + 1);
    last_child.resize(keep + 1);
    for (size_t d = keep; d < b.size(); ++d) {
      const auto id = static_cast<int32_t>(trie_.size());
      TrieNode node;
      node.byte = static_cast<uint8_t>(b[d]);
      node.begin = static_cast<uint32_t>(i);
      trie_.push_back(node);
      const int32_t parent = path[d];
      if (last_child[d] < 0) {
        trie_[static_cast<size_t>(parent)].first_child = id;
      } else {
        trie_[static_cast<size_t>(last_child[d])].next_sibling = id;
      }
      last_child[d] = id;
      path.push_back(id);
      last_child.push_back(-1);
    }
    TrieNode& leaf = trie_[static_cast<size_t>(path[b.size()])];
    leaf.terminal_end = static_cast<uint32_t>(i + 1);
    for (const int32_t n : path) trie_[static_cast<size_t>(n)].end = static_cast<uint32_t>(i + 1);
  }
  // Children come after their parent, so one backward pass fills the masks bottom-up.
  bytes_below_.assign(trie_.size(), ByteMask{});
  for (size_t n = trie_.size(); n-- > 0;) {
    for (int32_t c = trie_[n].first_child; c >= 0; c = trie_[static_cast<size_t>(c)].next_sibling) {
      const uint8_t b = trie_[static_cast<size_t>(c)].byte;
      bytes_below_[n][b >> 6] |= uint64_t{1} << (b & 63);
      for (size_t w = 0; w < 4; ++w) bytes_below_[n][w] |= bytes_below_[static_cast<size_t>(c)][w];
    }
  }
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
