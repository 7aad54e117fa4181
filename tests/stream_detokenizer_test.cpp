// Streaming detokenization: the pieces concatenate to the full decode, and a token that
// ends inside a UTF-8 character yields nothing until the character is complete.
#include <doctest/doctest.h>

#include "engine/sentencepiece_tokenizer.hpp"
#include "engine/stream_detokenizer.hpp"

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
  for (const std::string text : {"Hello world, how are you?", "  leading spaces and\ttabs\nnew lines\n\n",
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
