#include "engine/tokenizer/gguf_tokenizer.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/pretokenizer_regex.hpp"
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

constexpr std::string_view kLlama3SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

[[noreturn]] void fail(ErrorCode code, const GgufFile& file, const std::string& problem) {
  throw SpecdError(code, file.path().string() + ": " + problem);
}

// The protobuf wire format, just what a ModelProto needs (sentencepiece_model.proto;
// Debian ships no generated header for it).
class ProtoWriter {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(int field, int wire) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire)); }
  void int_field(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));  // negative int32s take ten bytes, as protobuf writes them
  }
  void float_field(int field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    out_.append(b, 4);
  }
  void bytes_field(int field, std::string_view v) {
    tag(field, 2);
    varint(v.size());
    out_.append(v);
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

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

// A SentencePiece BPE ModelProto holding the file's pieces: SentencePiece's BPE merges by
// piece score, as llama.cpp's SPM tokenizer does.
std::string sentencepiece_proto(const GgufFile& file, const Vocab& v) {
  const std::vector<float> scores =
      file.find("tokenizer.ggml.scores") ? file.floats("tokenizer.ggml.scores") : std::vector<float>(v.tokens.size());
  if (scores.size() != v.tokens.size())
    fail(ErrorCode::bad_value, file,
         "tokenizer.ggml.scores has " + std::to_string(scores.size()) + " entries for " +
             std::to_string(v.tokens.size()) + " tokens");
  ProtoWriter model;
  std::optional<int32_t> unk = v.unk;
  bool has_bytes = false;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const int64_t type = v.types[i] == undefined ? normal : v.types[i];
    if (type < normal || type > byte)
      fail(ErrorCode::bad_value, file, "token " + std::to_string(i) + " has type " + std::to_string(type));
    if (type == unknown && !unk) unk = static_cast<int32_t>(i);
    has_bytes = has_bytes || type == byte;
    ProtoWriter piece;
    piece.bytes_field(1, v.tokens[i]);
    piece.float_field(2, scores[i]);
    piece.int_field(3, type);
    model.bytes_field(1, piece.str());
  }
  if (!unk) fail(ErrorCode::tokenizer_error, file, "the SentencePiece vocabulary has no unknown token");
  const auto piece_of = [&](std::optional<int32_t> id) { return id ? v.tokens[static_cast<size_t>(*id)] : ""; };
  ProtoWriter trainer;
  trainer.int_field(3, 2);  // model_type: BPE
  trainer.int_field(4, static_cast<int64_t>(v.tokens.size()));
  trainer.int_field(35, has_bytes ? 1 : 0);  // byte_fallback
  trainer.int_field(40, *unk);
  trainer.int_field(41, v.bos.value_or(-1));
  trainer.int_field(42, v.eos.empty() ? -1 : v.eos[0]);
  trainer.int_field(43, -1);  // pad_id
  trainer.bytes_field(45, piece_of(unk));
  if (v.bos) trainer.bytes_field(46, piece_of(v.bos));
  if (!v.eos.empty()) trainer.bytes_field(47, piece_of(v.eos[0]));
  model.bytes_field(2, trainer.str());
  ProtoWriter normalizer;  // llama.cpp normalizes nothing but spaces
  normalizer.bytes_field(1, "identity");
  normalizer.int_field(3, file.bool_value("tokenizer.ggml.add_space_prefix", true) ? 1 : 0);  // add_dummy_prefix
  normalizer.int_field(4, 0);  // remove_extra_whitespaces
  normalizer.int_field(5, 1);  // escape_whitespaces
  model.bytes_field(3, normalizer.str());
  return model.str();
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
  } else {
    fail(ErrorCode::unsupported_architecture, file,
         "tokenizer.ggml.pre is '" + pre + "'; specd reads 'llama-bpe' (Llama 3) and 'gpt-2' BPE tokenizers");
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
