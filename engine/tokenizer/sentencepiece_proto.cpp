#include "engine/tokenizer/sentencepiece_proto.hpp"

#include <cstring>
#include <string_view>

namespace specd {

namespace {

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

}  // namespace

std::string sentencepiece_bpe_proto(const SentencePieceVocab& v) {
  ProtoWriter model;
  bool has_bytes = false;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    has_bytes = has_bytes || v.types[i] == PieceType::byte;
    ProtoWriter piece;
    piece.bytes_field(1, v.pieces[i]);
    piece.float_field(2, v.scores[i]);
    piece.int_field(3, static_cast<int64_t>(v.types[i]));
    model.bytes_field(1, piece.str());
  }
  const auto piece_of = [&](std::optional<int32_t> id) { return id ? v.pieces[static_cast<size_t>(*id)] : ""; };
  ProtoWriter trainer;
  trainer.int_field(3, 2);  // model_type: BPE
  trainer.int_field(4, static_cast<int64_t>(v.pieces.size()));
  trainer.int_field(35, has_bytes ? 1 : 0);  // byte_fallback
  trainer.int_field(40, v.unk);
  trainer.int_field(41, v.bos.value_or(-1));
  trainer.int_field(42, v.eos.value_or(-1));
  trainer.int_field(43, -1);  // pad_id
  trainer.bytes_field(45, piece_of(v.unk));
  if (v.bos) trainer.bytes_field(46, piece_of(v.bos));
  if (v.eos) trainer.bytes_field(47, piece_of(v.eos));
  model.bytes_field(2, trainer.str());
  ProtoWriter normalizer;
  normalizer.bytes_field(1, "identity");
  normalizer.int_field(3, v.add_dummy_prefix ? 1 : 0);
  normalizer.int_field(4, 0);  // remove_extra_whitespaces
  normalizer.int_field(5, 1);  // escape_whitespaces
  model.bytes_field(3, normalizer.str());
  return model.str();
}

}  // namespace specd
