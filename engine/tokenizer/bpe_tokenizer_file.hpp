#pragma once
// Reads the parts of a Hugging Face `tokenizer.json` that a byte-level BPE tokenizer
// (GPT-2, Llama 3, Qwen2/Qwen3 with their NFC normalizer) needs, and refuses, naming the
// file, the features specd does not implement (other normalizers, prefix spaces,
// added-token stripping) rather than
// tokenizing differently from HF.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace specd {

struct AddedTokenSpec {
  int32_t id = 0;
  std::string content;
  bool special = false;
};

struct BpeTokenizerFile {
  std::vector<std::pair<std::string, int32_t>> vocab;       // byte-level token text, id
  std::vector<std::pair<std::string, std::string>> merges;  // byte-level texts, in rank order
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<std::string> split_patterns;  // pre-tokenizer regexes, applied in order
  bool ignore_merges = false;               // a word that is itself in the vocabulary is one token
  bool byte_level = false;                  // a ByteLevel pre-tokenizer step was present
  bool nfc = false;                         // an NFC normalizer (Qwen2, Qwen3)
};

// Throws SpecdError: missing_file, malformed_json, unsupported_architecture (a
// tokenizer kind or option specd does not implement), missing_field.
BpeTokenizerFile read_bpe_tokenizer_file(const std::filesystem::path& file);

}  // namespace specd
