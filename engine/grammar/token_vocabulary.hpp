#pragma once
// A tokenizer's vocabulary as the grammar engine needs it: each id's raw bytes, the ids
// that never match grammar bytes (special and control tokens, empty pieces), the EOS ids
// (allowed exactly where the grammar can end), and the ordinary tokens sorted by bytes and
// as a trie over those bytes, so a walk over the vocabulary reads each shared prefix once.
// Immutable; any thread.
#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/token_bitset.hpp"

namespace specd {
class Tokenizer;
}

namespace specd::grammar {

class TokenVocabulary {
 public:
  TokenVocabulary(std::vector<std::string> bytes_by_id, std::span<const int32_t> special_ids,
                  std::span<const int32_t> eos_ids);

  size_t size() const { return bytes_.size(); }
  std::string_view bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const { return !ordinary_.test(id); }
  bool is_eos(int32_t id) const { return eos_.test(id); }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  const TokenBitset& ordinary_tokens() const { return ordinary_; }

  // Ordinary tokens sorted by bytes; lcp(i) is the common prefix length of sorted(i-1)
  // and sorted(i) (0 for i = 0).
  const std::vector<int32_t>& sorted() const { return sorted_; }
  uint32_t lcp(size_t i) const { return lcp_[i]; }

  // The same tokens as a trie: node 0 is the root (the empty prefix); a node's tokens
  // are the sorted positions [begin, end), of which [begin, terminal_end) end exactly
  // at the node. Children are linked in byte order.
  struct TrieNode {
    uint8_t byte = 0;
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    uint32_t begin = 0;
    uint32_t terminal_end = 0;
    uint32_t end = 0;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  // The bytes read anywhere below a trie node (its subtree's edges), 256 bits.
  using ByteMask = std::array<uint64_t, 4>;
  const ByteMask& bytes_below(int32_t trie_node) const { return bytes_below_[static_cast<size_t>(trie_node)]; }

 private:
  void build_trie();

  std::vector<std::string> bytes_;
  TokenBitset ordinary_;
  TokenBitset eos_;
  std::vector<int32_t> eos_ids_;
  std::vector<int32_t> sorted_;
  std::vector<uint32_t> lcp_;
  std::vector<TrieNode> trie_;
  std::vector<ByteMask> bytes_below_;
};

// From a loaded tokenizer: each id's bytes are id_to_piece(id); BOS, the EOS ids,
// empty pieces and `special_ids` never match grammar bytes.
TokenVocabulary vocabulary_from_tokenizer(const Tokenizer& tokenizer, std::span<const int32_t> special_ids);

// The ids of a Hugging Face tokenizer.json's added tokens marked special (Llama 3's
// <|eot_id|> and its reserved tokens), which the Tokenizer interface does not expose.
std::vector<int32_t> special_ids_from_tokenizer_json(const std::filesystem::path& tokenizer_json);

}  // namespace specd::grammar
