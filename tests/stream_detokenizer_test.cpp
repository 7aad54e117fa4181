// Streaming detokenization: the pieces concatenate to the full decode, and a token that
// ends inside a UTF-8 character yields nothing until the character is complete.
#include <doctest/doctest.h>

#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"
#include "engine/tokenizer/stream_detokenizer.hpp"

using namespace specd;

namespace {

const std::filesystem::path kLlama2 = std::filesystem::path(SPECD_SOURCE_DIR) / "../shared/data/llama2-tokenizer.model";

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t j = 1; j < len; ++j) {
      if ((static_cast<unsigned char>(s[i + j]) >> 6) != 0x2) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

TEST_CASE("streamed pieces concatenate to the full decode and are whole UTF-8 characters") {
  SentencePieceTokenizer tok(kLlama2);
  for (const std::string text :
       {"Hello world, how are you?", "  leading spaces and\ttabs\nnew lines\n\n",
        "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 done",
        "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99"}) {
    CAPTURE(text);
    const auto ids = tok.encode(text, true);
    StreamDetokenizer stream(tok);
    std::string joined;
    for (int32_t id : ids) {
      const std::string piece = stream.push(id);
      CHECK(valid_utf8(piece));
      joined += piece;
    }
    joined += stream.flush();
    CHECK(joined == tok.decode(ids));
  }
}

TEST_CASE("a character split over byte-fallback tokens is held back until complete") {
  SentencePieceTokenizer tok(kLlama2);
  const auto ids = tok.encode("\xF0\x9F\xA6\x99", false);  // llama emoji: not in the vocabulary
  int bytes = 0;
  for (int32_t id : ids) bytes += tok.is_byte(id) ? 1 : 0;
  REQUIRE(bytes == 4);
  StreamDetokenizer stream(tok);
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(stream.push(id));
  CHECK(pieces.back() == "\xF0\x9F\xA6\x99");
  for (size_t i = 0; i + 1 < pieces.size(); ++i) CHECK(pieces[i].empty());
  CHECK(stream.flush().empty());
}

TEST_CASE("an unfinished character at the end comes out of flush") {
  SentencePieceTokenizer tok(kLlama2);
  auto ids = tok.encode("ok \xF0\x9F\xA6\x99", false);
  ids.pop_back();  // drop the last byte: the character can never complete
  StreamDetokenizer stream(tok);
  std::string joined;
  for (int32_t id : ids) joined += stream.push(id);
  CHECK(joined == "ok ");
  const std::string rest = stream.flush();
  CHECK(rest.find("\xEF\xBF\xBD") != std::string::npos);
}

TEST_CASE("byte-level BPE: an emoji and CJK split across Llama 3 tokens stream as whole characters") {
  const std::filesystem::path file = std::filesystem::path(SPECD_LLAMA3_TOKENIZER_DIR) / "tokenizer.json";
  REQUIRE_MESSAGE(std::filesystem::exists(file), "missing " << file << ": run scripts/fetch_llama3_tokenizer.sh");
  const BpeTokenizer tok(file);
  // U+1F600 is two tokens, the first holding 3 of its 4 bytes.
  const std::string grin = "\xF0\x9F\x98\x80";
  const auto grin_ids = tok.encode(grin, false);
  REQUIRE(grin_ids == std::vector<int32_t>{76460, 222});
  StreamDetokenizer stream(tok);
  CHECK(stream.push(grin_ids[0]).empty());
  CHECK(stream.push(grin_ids[1]) == grin);
  CHECK(stream.flush().empty());

  // Mixed text: every piece is whole UTF-8 and the pieces rebuild the decode.
  for (const std::string text :
       {"I \xE2\x9D\xA4\xEF\xB8\x8F you \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 family",
        "\xE4\xB8\xAD\xE6\x96\x87\xE5\x88\x86\xE8\xAF\x8D \xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 end"}) {
    CAPTURE(text);
    const auto ids = tok.encode(text, true);
    StreamDetokenizer s(tok);
    std::string joined;
    size_t held_back = 0;
    for (int32_t id : ids) {
      const std::string piece = s.push(id);
      CHECK(valid_utf8(piece));
      held_back += piece.empty() ? 1 : 0;
      joined += piece;
    }
    joined += s.flush();
    CHECK(joined == tok.decode(ids));
    CHECK(held_back > 0);  // some token did end inside a character
  }
}
