#pragma once
// SentencePiece `.model` tokenizer (Llama 1/2 family). The SentencePiece library runs
// inside libspecd_spm_shim.so, loaded once per process with dlmopen into its own
// link-map namespace, because Debian's libsentencepiece carries a protobuf that
// clashes with libtorch's (DESIGN.md, "Facts measured on this platform").
// Immutable after construction; safe to call from any thread.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"

struct specd_spm;

namespace specd {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Throws SpecdError: missing_file when model_file does not exist, tokenizer_error
  // when it is not a SentencePiece model or the shim cannot be loaded, bad_value
  // when an override is outside the vocabulary.
  explicit SentencePieceTokenizer(const std::filesystem::path& model_file, SpecialIdOverrides overrides = {});
  // From a serialized ModelProto built in memory (a GGUF vocabulary); `source` names it
  // in messages.
  SentencePieceTokenizer(std::string_view serialized_model, const std::filesystem::path& source,
                         SpecialIdOverrides overrides = {});
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  // Added tokens (a tokenizer.json's <s>, </s>, ...) found in the text become their ids,
  // as HF does, when split_added_tokens gave them; otherwise SentencePiece sees all text.
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override;
  // Call before the tokenizer is shared: the added tokens' texts and ids.
  void split_added_tokens(std::vector<std::pair<std::string, int32_t>> tokens);
  std::string decode(std::span<const int32_t> ids) const override;
  std::string id_to_piece(int32_t id) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> bos_id() const override;
  const std::vector<int32_t>& eos_ids() const override;

  // True for byte-fallback pieces (<0xNN>), whose text is a single raw byte that
  // may be part of a longer UTF-8 sequence.
  bool is_byte(int32_t id) const;

 private:
  struct HandleDeleter {
    void operator()(specd_spm* handle) const;
  };

  std::vector<int32_t> encode_plain(std::string_view text, bool add_bos) const;
  void finish_load(const SpecialIdOverrides& overrides);
  void load_piece_texts();
  void set_special_ids(const SpecialIdOverrides& overrides);
  void check_id(int32_t id) const;

  std::filesystem::path model_file_;
  std::unique_ptr<specd_spm, HandleDeleter> handle_;
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_;
  std::vector<int32_t> eos_ids_;
  // Decoded-output text of every piece, built once so id_to_piece (called per
  // streamed token) does not cross into the shim.
  std::vector<std::string> piece_texts_;
  std::vector<bool> is_byte_;
  std::vector<std::pair<std::string, int32_t>> added_;  // longest first
};

// Trains a SentencePiece model with a trainer argument string, e.g.
// "--input=a.txt --model_prefix=m --vocab_size=300 --model_type=bpe --byte_fallback=true".
// Throws SpecdError(tokenizer_error) with the trainer's message on failure.
void train_sentencepiece(const std::string& trainer_args);

}  // namespace specd
