#pragma once
// A Hugging Face `tokenizer.json` of the SentencePiece-BPE kind (Llama 2, Mistral,
// TinyLlama: a BPE model over text whose spaces became U+2581, by a Prepend/Replace
// normalizer or a Metaspace pre-tokenizer, with byte fallback), read into the vocabulary
// the SentencePiece library runs (sentencepiece_proto.hpp): each merged piece scores
// minus the rank of the merge that makes it, so SentencePiece's best-score-first merging
// follows HF's rank order.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/sentencepiece_proto.hpp"

namespace specd {

struct SentencePieceJson {
  SentencePieceVocab vocab;  // bos: the post-processor template's first token; eos: "</s>"
  std::vector<std::pair<std::string, int32_t>> added_tokens;  // matched in text before SentencePiece runs
};

// Throws SpecdError: missing_file, malformed_json, and unsupported_architecture naming
// what makes the file another kind (a byte-level BPE, another normalizer, ...).
SentencePieceJson read_sentencepiece_json(const std::filesystem::path& file);

}  // namespace specd
