// GPT-2's byte-to-character alphabet and lossy UTF-8 decoding.
#include <doctest/doctest.h>

#include "engine/tokenizer/byte_level.hpp"

using namespace specd;

TEST_CASE("printable Latin-1 bytes map to themselves, the rest to U+0100 onwards in byte order") {
  CHECK(byte_to_code_point('A') == U'A');
  CHECK(byte_to_code_point('!') == U'!');
  CHECK(byte_to_code_point(0xE9) == U'\u00E9');
  CHECK(byte_to_code_point(0x00) == 0x100);
  CHECK(byte_to_code_point('\n') == 0x10A);  // 'Ċ'
  CHECK(byte_to_code_point(' ') == 0x120);   // 'Ġ'
  CHECK(byte_to_code_point(0x7F) == 0x121);  // after the 33 bytes 0x00-0x20
  CHECK(byte_to_code_point(0xA0) == 0x142);
  CHECK(byte_to_code_point(0xAD) == 0x143);  // soft hyphen, the last unprintable byte
}

TEST_CASE("byte-level strings round-trip every byte") {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string text = bytes_to_byte_level(all);
  CHECK(byte_level_to_bytes(text) == all);
  CHECK(bytes_to_byte_level(" hello\n") == "\xC4\xA0hello\xC4\x8A");  // "Ġhello Ċ"
  CHECK(byte_level_to_bytes("\xC4\xA0hi") == " hi");
  CHECK_FALSE(byte_level_to_bytes("\xE4\xBD\xA0").has_value());  // not in the alphabet
  CHECK_FALSE(byte_level_to_bytes("\xC4").has_value());          // truncated
}

TEST_CASE("invalid UTF-8 decodes with one U+FFFD per maximal invalid subsequence") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(utf8_lossy("plain \xE2\x82\xAC") == "plain \xE2\x82\xAC");
  CHECK(utf8_lossy("\xF0\x9F\x98") == r);  // a truncated emoji: one replacement
  CHECK(utf8_lossy("a\xF0\x9F\x98z") == "a" + r + "z");
  CHECK(utf8_lossy("\xFF\xFE") == r + r);          // two bytes that never start a character
  CHECK(utf8_lossy("\xC0\xAF") == r + r);          // overlong form
  CHECK(utf8_lossy("\xED\xA0\x80") == r + r + r);  // a surrogate
  CHECK(utf8_lossy("\xE2\x82") == r);
  CHECK(utf8_lossy("") == "");
}
