#pragma once
// Tokenizers from a GGUF file's `tokenizer.*` metadata, read as llama.cpp reads them:
// tokenizer.ggml.model "llama" is SentencePiece (pieces, scores and types become a BPE
// ModelProto for the sentencepiece shim; add_space_prefix, absent meaning true as in
// llama.cpp), "gpt2" byte-level BPE (tokens and merges; tokenizer.ggml.pre "llama-bpe" or
// "llama3" for Llama 3's pre-tokenizer, "gpt-2" for GPT-2's). Special ids from
// tokenizer.ggml.{bos,eos,eot,eom}_token_id; no BOS when add_bos_token is false.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace specd {

class GgufFile;
class Tokenizer;

// Throws SpecdError naming the file: unsupported_architecture for another tokenizer
// model or pre-tokenizer, missing_field / bad_value for absent or inconsistent keys,
// tokenizer_error when the vocabulary does not make a tokenizer.
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& file);

// The file's tokenizer.chat_template, if any, with the BOS and EOS token texts.
struct GgufChatTemplate {
  std::string source;
  std::string bos_token, eos_token;
};
std::optional<GgufChatTemplate> gguf_chat_template(const GgufFile& file);

}  // namespace specd
