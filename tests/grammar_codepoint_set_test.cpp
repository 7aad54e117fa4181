// Code point sets as UTF-8 byte ranges: for every scalar value, its encoding matches
// exactly one of a set's sequences when the set holds it and none otherwise, so a
// class compiled to bytes matches valid UTF-8 only.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/base/utf8.hpp"
#include "engine/grammar/codepoint_set.hpp"

namespace g = specd::grammar;

namespace {

int matching_sequences(const std::vector<g::Utf8Sequence>& seqs, const std::string& bytes) {
  int n = 0;
  for (const g::Utf8Sequence& s : seqs) {
    if (static_cast<size_t>(s.length) != bytes.size()) continue;
    bool ok = true;
    for (int i = 0; i < s.length; ++i) {
      const auto b = static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
      ok = ok && b >= s.lo[static_cast<size_t>(i)] && b <= s.hi[static_cast<size_t>(i)];
    }
    n += ok ? 1 : 0;
  }
  return n;
}

void check_exactly(const g::CodepointSet& set) {
  const std::vector<g::Utf8Sequence> seqs = set.utf8_sequences();
  int wrong = 0;
  for (uint32_t cp = 0; cp <= g::kMaxCodepoint; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const int expected = set.contains(cp) ? 1 : 0;
    if (matching_sequences(seqs, specd::utf8_encode(static_cast<char32_t>(cp))) != expected) ++wrong;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("every scalar value's encoding is matched exactly by the sets that hold it") {
  check_exactly(g::CodepointSet::all());
  g::CodepointSet odd;
  odd.add('a', 'z');
  odd.add(0x7F, 0x80);
  odd.add(0x7FF, 0x801);
  odd.add(0xD7FF, 0xE000);  // across the surrogates
  odd.add(0xFFFF, 0x10000);
  odd.add(0x10FFFF);
  check_exactly(odd);
  check_exactly(odd.complement());
}

TEST_CASE("no sequence matches an overlong form, a surrogate or a value past U+10FFFF") {
  const std::vector<g::Utf8Sequence> seqs = g::CodepointSet::all().utf8_sequences();
  for (const std::string bad :
       {"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x80\x80\x80",
        "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff"}) {
    CHECK_MESSAGE(matching_sequences(seqs, bad) == 0, "matched " << bad.size() << " bytes");
  }
}

TEST_CASE("set algebra: add merges, subtract and complement exclude surrogates") {
  g::CodepointSet s;
  s.add('a', 'c');
  s.add('d', 'f');
  s.add('x');
  REQUIRE(s.ranges().size() == 2);
  CHECK(s.ranges()[0].lo == 'a');
  CHECK(s.ranges()[0].hi == 'f');
  g::CodepointSet vowels;
  vowels.add('a');
  vowels.add('e');
  s.subtract(vowels);
  CHECK_FALSE(s.contains('a'));
  CHECK(s.contains('b'));
  CHECK_FALSE(s.contains('e'));
  CHECK(s.contains('x'));
  const g::CodepointSet c = s.complement();
  CHECK(c.contains('a'));
  CHECK_FALSE(c.contains('b'));
  CHECK_FALSE(c.contains(0xD800));
  CHECK(c.contains(0x10FFFF));
}
