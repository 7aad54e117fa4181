#pragma once
// A SentencePiece BPE ModelProto written from a vocabulary held elsewhere (a GGUF file's
// `tokenizer.ggml.*`, a SentencePiece-kind tokenizer.json), so the SentencePiece library
// runs it as it runs a `tokenizer.model`: its BPE merges the adjacent pair whose joined
// piece scores highest, leftmost first. A plain value.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specd {

// SentencePiece's piece types, by number (llama.cpp's token types are the same).
enum class PieceType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

struct SentencePieceVocab {
  std::vector<std::string> pieces;  // by id; spaces as U+2581
  std::vector<float> scores;
  std::vector<PieceType> types;
  int32_t unk = 0;
  std::optional<int32_t> bos, eos;
  bool add_dummy_prefix = true;  // a U+2581 before the text
};

// The serialized ModelProto (model_type BPE, byte_fallback when there are byte pieces,
// normalizer "identity" escaping spaces, no extra-whitespace removal).
std::string sentencepiece_bpe_proto(const SentencePieceVocab& vocab);

}  // namespace specd
