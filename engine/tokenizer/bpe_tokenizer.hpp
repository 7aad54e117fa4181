#pragma once
// Hugging Face `tokenizer.json` byte-level BPE (GPT-2 family, Llama 3, Qwen2/Qwen3).
// Encoding follows HF tokenizers: added tokens (e.g. <|eot_id|>) are cut out of the text
// first, the rest is normalized (NFC, where the file asks) and split into words by the
// pre-tokenizer regex, each word's bytes are merged by rank. Immutable after construction except for an internal word
// cache behind a mutex; safe to call from any thread.
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

class PretokenizerRegex;
struct BpeTokenizerFile;

class BpeTokenizer final : public Tokenizer {
 public:
  // Reads tokenizer_file; BOS/EOS come from overrides, else from the bos_token /
  // eos_token of a tokenizer_config.json beside it. Throws SpecdError.
  explicit BpeTokenizer(const std::filesystem::path& tokenizer_file, SpecialIdOverrides overrides = {});
  // From parts read elsewhere (a GGUF vocabulary); `source` names them in messages.
  BpeTokenizer(BpeTokenizerFile parts, const std::filesystem::path& source, SpecialIdOverrides overrides);
  ~BpeTokenizer() override;
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  // Special-token strings in text always become their ids (as HF and
  // @lenml/tokenizers do); add_bos prepends bos_id() when there is one and the
  // tokenizer_config.json beside the file does not say add_bos_token false (Qwen).
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override;
  // Invalid UTF-8 (a character cut between tokens) decodes as U+FFFD.
  std::string decode(std::span<const int32_t> ids) const override;
  // Raw bytes of the token; an added token gives its content.
  std::string id_to_piece(int32_t id) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> bos_id() const override;
  const std::vector<int32_t>& eos_ids() const override;

  // The id of a token given as raw bytes (or an added token's content).
  std::optional<int32_t> token_id(std::string_view bytes) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };

  void build(BpeTokenizerFile& file);
  void set_special_ids(const SpecialIdOverrides& overrides);
  void encode_text(std::string_view text, std::vector<int32_t>& ids) const;
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;
  std::vector<int32_t> merge_word(std::string_view word) const;
  void check_id(int32_t id) const;

  std::filesystem::path file_;
  std::unordered_map<std::string, int32_t> bytes_to_id_;
  std::vector<std::string> id_bytes_;  // raw bytes per id (added tokens: content)
  std::vector<bool> known_id_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id)
  // Added tokens grouped by first byte, longest first, for leftmost-longest matching.
  std::array<std::vector<std::pair<std::string, int32_t>>, 256> added_by_first_byte_;
  std::vector<std::unique_ptr<PretokenizerRegex>> splitters_;
  bool ignore_merges_ = false;
  bool nfc_ = false;
  bool adds_bos_ = true;  // tokenizer_config.json's add_bos_token (Qwen: false)
  std::optional<int32_t> bos_id_;
  std::vector<int32_t> eos_ids_;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace specd
