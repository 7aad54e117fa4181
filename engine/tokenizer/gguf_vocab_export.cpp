#include "engine/tokenizer/gguf_vocab_export.hpp"

#include <cstring>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/pretokenizer_regex.hpp"
#include "engine/tokenizer/sentencepiece_json.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/tokenizer_config.hpp"

namespace specd {

namespace {

namespace fs = std::filesystem;

// Reads the protobuf wire format of a SentencePiece ModelProto, just the fields a GGUF
// vocabulary keeps (sentencepiece_model.proto: pieces, trainer_spec ids, normalizer_spec's
// add_dummy_prefix).
class ProtoReader {
 public:
  ProtoReader(const char* p, const char* end, const fs::path& file) : p_(p), end_(end), file_(file) {}
  bool done() const { return p_ >= end_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) fail();
      const auto b = static_cast<uint8_t>(*p_++);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail();
  }
  // The next field: its number and wire type; LEN fields' bytes in *sub.
  std::pair<uint32_t, uint32_t> field() {
    const uint64_t tag = varint();
    return {static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7)};
  }
  ProtoReader sub() {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) fail();
    ProtoReader r(p_, p_ + n, file_);
    p_ += n;
    return r;
  }
  std::string bytes() {
    ProtoReader r = sub();
    return std::string(r.p_, r.end_);
  }
  float fixed32() {
    if (end_ - p_ < 4) fail();
    float f;
    std::memcpy(&f, p_, 4);
    p_ += 4;
    return f;
  }
  void skip(uint32_t wire) {
    if (wire == 0) {
      (void)varint();
    } else if (wire == 1 || wire == 5) {
      const long n = wire == 1 ? 8 : 4;
      if (end_ - p_ < n) fail();
      p_ += n;
    } else if (wire == 2) {
      (void)sub();
    } else {
      fail();
    }
  }

 private:
  [[noreturn]] void fail() const {
    throw SpecdError(ErrorCode::tokenizer_error, file_.string() + ": not a SentencePiece model (bad protobuf)");
  }
  const char* p_;
  const char* end_;
  const fs::path& file_;
};

SentencePieceVocab read_sentencepiece_model(const fs::path& file) {
  const std::string bytes = read_whole_file(file, "SentencePiece model");
  SentencePieceVocab v;
  v.bos = 1, v.eos = 2;  // the proto's defaults
  ProtoReader model(bytes.data(), bytes.data() + bytes.size(), file);
  while (!model.done()) {
    const auto [number, wire] = model.field();
    if (number == 1 && wire == 2) {
      ProtoReader piece = model.sub();
      std::string text;
      float score = 0;
      int32_t type = 1;
      while (!piece.done()) {
        const auto [n, w] = piece.field();
        if (n == 1 && w == 2)
          text = piece.bytes();
        else if (n == 2 && w == 5)
          score = piece.fixed32();
        else if (n == 3 && w == 0)
          type = static_cast<int32_t>(piece.varint());
        else
          piece.skip(w);
      }
      v.pieces.push_back(std::move(text));
      v.scores.push_back(score);
      v.types.push_back(static_cast<PieceType>(type));
    } else if ((number == 2 || number == 3) && wire == 2) {
      ProtoReader spec = model.sub();
      while (!spec.done()) {
        const auto [n, w] = spec.field();
        if (w != 0) {
          spec.skip(w);
          continue;
        }
        const auto value = static_cast<int32_t>(spec.varint());  // -1 is ten bytes, cast back
        if (number == 2 && n == 40) v.unk = value;
        if (number == 2 && n == 41) v.bos = value >= 0 ? std::optional<int32_t>(value) : std::nullopt;
        if (number == 2 && n == 42) v.eos = value >= 0 ? std::optional<int32_t>(value) : std::nullopt;
        if (number == 3 && n == 3) v.add_dummy_prefix = value != 0;
      }
    } else {
      model.skip(wire);
    }
  }
  if (v.pieces.empty()) throw SpecdError(ErrorCode::tokenizer_error, file.string() + ": no pieces");
  return v;
}

std::string pad_token(size_t id) { return "[PAD" + std::to_string(id) + "]"; }

void check_fits(size_t tokens, int64_t model_vocab, const fs::path& dir) {
  if (static_cast<int64_t>(tokens) > model_vocab)
    throw SpecdError(ErrorCode::bad_value, dir.string() + ": the tokenizer has " + std::to_string(tokens) +
                                               " tokens, the model's vocab_size is " + std::to_string(model_vocab));
}

void add_sentencepiece(SentencePieceVocab v, int64_t model_vocab, const fs::path& dir, GgufWriter& w) {
  check_fits(v.pieces.size(), model_vocab, dir);
  for (size_t id = v.pieces.size(); static_cast<int64_t>(id) < model_vocab; ++id) {
    v.pieces.push_back(pad_token(id));
    v.scores.push_back(-1000.0f);
    v.types.push_back(PieceType::unused);
  }
  std::vector<int32_t> types;
  for (PieceType t : v.types) types.push_back(static_cast<int32_t>(t));
  w.string("tokenizer.ggml.model", "llama").string("tokenizer.ggml.pre", "default");
  w.strings("tokenizer.ggml.tokens", v.pieces).floats("tokenizer.ggml.scores", v.scores);
  w.i32s("tokenizer.ggml.token_type", types);
  w.u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk));
  if (v.bos) w.u32("tokenizer.ggml.bos_token_id", uint32_t(*v.bos));
  if (v.eos) w.u32("tokenizer.ggml.eos_token_id", uint32_t(*v.eos));
  w.boolean("tokenizer.ggml.add_bos_token", v.bos.has_value()).boolean("tokenizer.ggml.add_eos_token", false);
  w.boolean("tokenizer.ggml.add_space_prefix", v.add_dummy_prefix);
}

// llama.cpp's name of a byte-level BPE's pre-tokenizer, from its split pattern.
std::string pre_name(const BpeTokenizerFile& parts, const fs::path& file) {
  if (parts.split_patterns.size() == 1) {
    if (parts.split_patterns[0] == kLlama3SplitPattern) return "llama-bpe";
    if (parts.split_patterns[0] == kQwen2SplitPattern) return "qwen2";
    if (parts.split_patterns[0] == kGpt2SplitPattern) return "gpt-2";
  }
  throw SpecdError(ErrorCode::unsupported_architecture,
                   file.string() + ": its pre-tokenizer is none of llama-bpe, qwen2 and gpt-2, which GGUF names");
}

void add_byte_level(const BpeTokenizerFile& parts, const Tokenizer& ids, int64_t model_vocab, const fs::path& file,
                    GgufWriter& w) {
  check_fits(parts.vocab.size() + parts.added_tokens.size(), model_vocab, file.parent_path());
  std::vector<std::string> tokens(static_cast<size_t>(model_vocab));
  std::vector<int32_t> types(tokens.size(), 5);  // unused until a token fills the id
  const auto put = [&](int32_t id, const std::string& text, int32_t type) {
    if (id < 0 || id >= model_vocab)
      throw SpecdError(ErrorCode::bad_value, file.string() + ": token id " + std::to_string(id) +
                                                 " is outside the model's vocab_size " + std::to_string(model_vocab));
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = type;
  };
  for (const auto& [text, id] : parts.vocab) put(id, text, 1);
  for (const AddedTokenSpec& t : parts.added_tokens) put(t.id, t.content, t.special ? 3 : 4);  // control, user defined
  for (size_t id = 0; id < tokens.size(); ++id)
    if (types[id] == 5) tokens[id] = pad_token(id);
  std::vector<std::string> merges;
  for (const auto& [left, right] : parts.merges) merges.push_back(left + " " + right);
  w.string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", pre_name(parts, file));
  w.strings("tokenizer.ggml.tokens", tokens).i32s("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  if (ids.bos_id()) w.u32("tokenizer.ggml.bos_token_id", uint32_t(*ids.bos_id()));
  if (!ids.eos_ids().empty()) w.u32("tokenizer.ggml.eos_token_id", uint32_t(ids.eos_ids()[0]));
  if (ids.eos_ids().size() > 1) w.u32("tokenizer.ggml.eot_token_id", uint32_t(ids.eos_ids()[1]));
  // Whether encoding adds the BOS (Qwen's folders name one and never add it).
  w.boolean("tokenizer.ggml.add_bos_token", !ids.encode("", true).empty());
}

}  // namespace

void add_gguf_vocab(const fs::path& dir, int64_t model_vocab, GgufWriter& w) {
  const fs::path json = dir / "tokenizer.json", model = dir / "tokenizer.model";
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(dir);  // the kind specd runs, and its BOS/EOS
  std::optional<BpeTokenizerFile> parts;
  if (fs::exists(json)) {
    try {
      parts = read_bpe_tokenizer_file(json);
    } catch (const SpecdError& e) {
      if (e.code() != ErrorCode::unsupported_architecture) throw;
    }
  }
  if (parts) {
    add_byte_level(*parts, *tokenizer, model_vocab, json, w);
  } else {
    SentencePieceVocab v = fs::exists(model) ? read_sentencepiece_model(model) : read_sentencepiece_json(json).vocab;
    // The ids generation follows (config.json, generation_config.json) win, as at load.
    v.bos = tokenizer->bos_id();
    if (!tokenizer->eos_ids().empty()) v.eos = tokenizer->eos_ids()[0];
    add_sentencepiece(std::move(v), model_vocab, dir, w);
  }
  if (fs::exists(dir / "tokenizer_config.json"))
    if (auto chat = read_tokenizer_config(dir / "tokenizer_config.json").chat_template)
      w.string("tokenizer.chat_template", *chat);
}

}  // namespace specd
