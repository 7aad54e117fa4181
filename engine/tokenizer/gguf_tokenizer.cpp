#include "engine/tokenizer/gguf_tokenizer.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/pretokenizer_regex.hpp"
#include "engine/tokenizer/sentencepiece_proto.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"

namespace specd {

namespace {

// llama.cpp's token types, which are SentencePiece's piece types by number.
enum TokenType : int64_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6
};

[[noreturn]] void fail(ErrorCode code, const GgufFile& file, const std::string& problem) {
  throw SpecdError(code, file.path().string() + ": " + problem);
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  std::optional<int32_t> bos, unk;
  std::vector<int32_t> eos;
};

std::optional<int32_t> token_id_key(const GgufFile& file, const char* key, size_t vocab) {
  const std::optional<uint64_t> id = file.uint_value(key, std::nullopt);
  if (!id) return std::nullopt;
  if (*id >= vocab)
    fail(ErrorCode::bad_value, file,
         std::string("metadata key '") + key + "' is " + std::to_string(*id) + ", outside the vocabulary of " +
             std::to_string(vocab) + " tokens");
  return static_cast<int32_t>(*id);
}

Vocab read_vocab(const GgufFile& file) {
  Vocab v;
  v.tokens = file.strings("tokenizer.ggml.tokens");
  const size_t n = v.tokens.size();
  if (n == 0) fail(ErrorCode::bad_value, file, "tokenizer.ggml.tokens is empty");
  if (file.find("tokenizer.ggml.token_type")) {
    v.types = file.ints("tokenizer.ggml.token_type");
    if (v.types.size() != n)
      fail(ErrorCode::bad_value, file,
           "tokenizer.ggml.token_type has " + std::to_string(v.types.size()) + " entries for " + std::to_string(n) +
               " tokens");
  } else {
    v.types.assign(n, normal);
  }
  if (file.bool_value("tokenizer.ggml.add_bos_token", true))
    v.bos = token_id_key(file, "tokenizer.ggml.bos_token_id", n);
  v.unk = token_id_key(file, "tokenizer.ggml.unknown_token_id", n);
  for (const char* key :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (auto id = token_id_key(file, key, n); id && std::find(v.eos.begin(), v.eos.end(), *id) == v.eos.end())
      v.eos.push_back(*id);
  }
  return v;
}

SpecialIdOverrides overrides_of(const GgufFile& file, const Vocab& v) {
  SpecialIdOverrides o;
  o.bos = v.bos;
  o.eos = v.eos;
  o.bos_file = o.eos_file = file.path();
  return o;
}

// The file's pieces as SentencePiece runs them: its BPE merges by piece score, as
// llama.cpp's SPM tokenizer does.
std::string sentencepiece_proto(const GgufFile& file, const Vocab& v) {
  SentencePieceVocab out;
  out.pieces = v.tokens;
  out.scores =
      file.find("tokenizer.ggml.scores") ? file.floats("tokenizer.ggml.scores") : std::vector<float>(v.tokens.size());
  if (out.scores.size() != v.tokens.size())
    fail(ErrorCode::bad_value, file,
         "tokenizer.ggml.scores has " + std::to_string(out.scores.size()) + " entries for " +
             std::to_string(v.tokens.size()) + " tokens");
  std::optional<int32_t> unk = v.unk;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const int64_t type = v.types[i] == undefined ? normal : v.types[i];
    if (type < normal || type > byte)
      fail(ErrorCode::bad_value, file, "token " + std::to_string(i) + " has type " + std::to_string(type));
    if (type == unknown && !unk) unk = static_cast<int32_t>(i);
    out.types.push_back(static_cast<PieceType>(type));
  }
  if (!unk) fail(ErrorCode::tokenizer_error, file, "the SentencePiece vocabulary has no unknown token");
  out.unk = *unk;
  out.bos = v.bos;
  if (!v.eos.empty()) out.eos = v.eos[0];
  // llama.cpp normalizes nothing but spaces.
  out.add_dummy_prefix = file.bool_value("tokenizer.ggml.add_space_prefix", true);
  return sentencepiece_bpe_proto(out);
}

BpeTokenizerFile bpe_parts(const GgufFile& file, const Vocab& v) {
  const std::string pre = file.string_value("tokenizer.ggml.pre", "default").value();
  BpeTokenizerFile parts;
  parts.byte_level = true;
  if (pre == "llama-bpe" || pre == "llama3") {
    parts.split_patterns.emplace_back(kLlama3SplitPattern);
    parts.ignore_merges = true;
  } else if (pre == "gpt-2") {
    parts.split_patterns.emplace_back(kGpt2SplitPattern);
  } else if (pre == "qwen2") {
    // llama.cpp applies no NFC here (HF's tokenizer.json does): specd follows the file's program.
    parts.split_patterns.emplace_back(kQwen2SplitPattern);
  } else {
    fail(ErrorCode::unsupported_architecture, file,
         "tokenizer.ggml.pre is '" + pre +
             "'; specd reads 'llama-bpe' (Llama 3), 'qwen2' (Qwen2, Qwen3) and 'gpt-2' "
             "BPE tokenizers");
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    if (v.types[i] == control || v.types[i] == user_defined) {
      if (!v.tokens[i].empty()) parts.added_tokens.push_back({id, v.tokens[i], v.types[i] == control});
    } else {
      parts.vocab.emplace_back(v.tokens[i], id);
    }
  }
  for (const std::string& merge : file.strings("tokenizer.ggml.merges")) {
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos)
      fail(ErrorCode::bad_value, file, "tokenizer.ggml.merges entry \"" + merge + "\" is not two tokens");
    parts.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
  }
  return parts;
}

}  // namespace

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& file) {
  const std::string model = file.string_value("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    fail(ErrorCode::unsupported_architecture, file,
         "tokenizer.ggml.model is '" + model + "'; specd reads 'llama' (SentencePiece) and 'gpt2' (BPE)");
  const Vocab v = read_vocab(file);
  if (model == "llama")
    return std::make_unique<SentencePieceTokenizer>(sentencepiece_proto(file, v), file.path(), overrides_of(file, v));
  return std::make_unique<BpeTokenizer>(bpe_parts(file, v), file.path(), overrides_of(file, v));
}

std::optional<GgufChatTemplate> gguf_chat_template(const GgufFile& file) {
  std::optional<std::string> source = file.string_value("tokenizer.chat_template", std::nullopt);
  if (!source) return std::nullopt;
  const std::vector<std::string> tokens = file.strings("tokenizer.ggml.tokens");
  const auto text = [&](const char* key) -> std::string {
    const std::optional<uint64_t> id = file.uint_value(key, std::nullopt);
    return id && *id < tokens.size() ? tokens[*id] : "";
  };
  return GgufChatTemplate{*source, text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id")};
}

}  // namespace specd
