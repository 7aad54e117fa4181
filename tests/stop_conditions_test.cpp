// Tests for engine/request/stop_conditions: exact emitted pieces for hand-picked feeds, and,
// exhaustively for short texts, that every way of cutting a text into feed() calls emits
// exactly what a byte-at-a-time reference says (stop strings across token boundaries,
// overlapping and nested candidates, multi-byte UTF-8), plus the error on an empty stop.
#include "engine/request/stop_conditions.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/errors.hpp"

using namespace specd;

namespace {

using Stops = std::vector<std::string>;

struct Expected {
  size_t emitted;  // bytes of the text emitted in total
  bool stopped;
};

// The reference, written differently from the matcher: walk the text byte by byte; the
// stream stops at the first byte completing any stop, cut before the longest stop ending
// there. Otherwise everything is emitted except the longest suffix that could still grow
// into a stop.
Expected reference(const std::string& seen, const Stops& stops) {
  for (size_t end = 1; end <= seen.size(); ++end) {
    const std::string_view prefix(seen.data(), end);
    size_t longest = 0;
    for (const auto& stop : stops) {
      if (prefix.ends_with(stop)) longest = std::max(longest, stop.size());
    }
    if (longest > 0) return {end - longest, true};
  }
  size_t held = 0;
  for (const auto& stop : stops) {
    for (size_t len = 1; len < stop.size() && len <= seen.size(); ++len) {
      if (std::string_view(seen).ends_with(std::string_view(stop).substr(0, len))) {
        held = std::max(held, len);
      }
    }
  }
  return {seen.size() - held, false};
}

// Feeds `text` cut at the positions whose bit is set in `cuts` and checks every emitted
// piece, the stopped flag after each feed, and finish().
void check_split(const std::string& text, const Stops& stops, uint32_t cuts) {
  StopStringMatcher matcher(stops);
  std::string emitted;
  size_t start = 0;
  for (size_t pos = 1; pos <= text.size(); ++pos) {
    if (pos < text.size() && !(cuts >> (pos - 1) & 1)) continue;
    const auto result = matcher.feed(std::string_view(text).substr(start, pos - start));
    const Expected want = reference(text.substr(0, pos), stops);
    CAPTURE(text);
    CAPTURE(cuts);
    CAPTURE(pos);
    REQUIRE(want.emitted >= emitted.size());
    REQUIRE(result.emit == text.substr(emitted.size(), want.emitted - emitted.size()));
    emitted += result.emit;
    REQUIRE(result.stopped == want.stopped);
    REQUIRE(matcher.stopped() == want.stopped);
    start = pos;
  }
  const Expected whole = reference(text, stops);
  const std::string tail = matcher.finish();
  if (whole.stopped) {
    CHECK(emitted == text.substr(0, whole.emitted));
    CHECK(tail.empty());
  } else {
    CHECK(emitted + tail == text);
  }
}

// Every one of the 2^(n-1) ways to cut an n-byte text into non-empty pieces.
void check_all_splits(const std::string& text, const Stops& stops) {
  REQUIRE(text.size() <= 16);
  const uint32_t count = text.empty() ? 1 : 1u << (text.size() - 1);
  for (uint32_t cuts = 0; cuts < count; ++cuts) check_split(text, stops, cuts);
}

std::vector<std::string> emits(StopStringMatcher& matcher, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& piece : pieces) out.push_back(matcher.feed(piece).emit);
  return out;
}

using Pieces = std::vector<std::string>;

}  // namespace

TEST_CASE("a stop string split over several feeds is found and never emitted") {
  StopStringMatcher matcher({"</s>"});
  CHECK(emits(matcher, {"Hello <", "/", "s", ">tail"}) == Pieces{"Hello ", "", "", ""});
  CHECK(matcher.stopped());
  CHECK(matcher.feed("more").emit.empty());
  CHECK(matcher.feed("more").stopped);
  CHECK(matcher.finish().empty());
}

TEST_CASE("a held-back tail is released when it stops matching, and by finish()") {
  StopStringMatcher matcher({"</s>"});
  CHECK(emits(matcher, {"a <", "/", "b", " c <"}) == Pieces{"a ", "", "</b", " c "});
  CHECK_FALSE(matcher.stopped());
  CHECK(matcher.finish() == "<");
}

TEST_CASE("overlapping candidates: stops {\"ab\", \"b c\"}") {
  StopStringMatcher first({"ab", "b c"});
  CHECK(emits(first, {"x", "a", "b", " c"}) == Pieces{"x", "", "", ""});
  CHECK(first.stopped());

  StopStringMatcher second({"ab", "b c"});
  CHECK(emits(second, {"b", " ", "c", "ab"}) == Pieces{"", "", "", ""});
  CHECK(second.stopped());

  StopStringMatcher one_feed({"ab", "b c"});
  const auto result = one_feed.feed("zb cab");
  CHECK(result.emit == "z");
  CHECK(result.stopped);
}

TEST_CASE("the earliest match wins; a stop inside a longer one fires first") {
  StopStringMatcher later_listed({"world", "o"});
  CHECK(later_listed.feed("hello world").emit == "hell");
  // "bc" is complete one byte before "abcd" could be, so generation ends there.
  StopStringMatcher nested({"abcd", "bc"});
  CHECK(nested.feed("xabcdy").emit == "xa");
  // Stops ending on the same byte: the longer one starts earlier.
  StopStringMatcher same_end({"bc", "abc"});
  CHECK(same_end.feed("zabcq").emit == "z");
}

TEST_CASE("no stop strings: everything is emitted at once") {
  StopStringMatcher matcher({});
  CHECK(emits(matcher, {"a", "</s>", "", "\xE2\x82"}) == Pieces{"a", "</s>", "", "\xE2\x82"});
  CHECK(matcher.finish().empty());
  CHECK_FALSE(matcher.stopped());
}

TEST_CASE("multi-byte UTF-8: a shared lead byte is held, then released whole") {
  // U+20AC EURO SIGN is E2 82 AC; U+20A4 LIRA SIGN is E2 82 A4.
  StopStringMatcher matcher({"\xE2\x82\xAC"});
  CHECK(emits(matcher, {"a", "\xE2", "\x82", "\xA4", "5\xE2\x82", "\xAC!"}) ==
        Pieces{"a", "", "", "\xE2\x82\xA4", "5", ""});
  CHECK(matcher.stopped());
}

TEST_CASE("an empty stop string is rejected with invalid_argument") {
  try {
    StopStringMatcher matcher({"ok", ""});
    FAIL("expected SpecdError");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
  }
}

TEST_CASE("every way of cutting a text emits the reference's pieces") {
  struct Case {
    Stops stops;
    std::vector<std::string> texts;
  };
  const std::vector<Case> cases{
      {{"ab", "b c"}, {"xab cd", "xb cab", "ab c", "b b c!", "aab", "a b c", "bbb"}},
      {{"abcd", "bc"}, {"xabcdy", "abcabcd", "abdbc", "ab"}},
      {{"aab"}, {"aaab", "aaaaab", "aabaab", "aaaaaa"}},
      {{"</s>", "\n\n"}, {"hi\n</s>", "a\n\nb", "</</s", "x</s/>\n"}},
      {{"\xC3\xA9", "\xE2\x82\xAC"},  // U+00E9, U+20AC; texts with U+20A4, U+00E8
       {"caf\xC3\xA9s", "\xE2\x82\xA4\xE2\x82\xAC", "\xC3\xA8\xE2\x82"}},
      {{"aba", "bab"}, {"abababa", "babab", "aabba"}},
      {{"x"}, {"", "x", "abc", "abxc"}},
      {{}, {"anything", ""}},
  };
  for (const auto& c : cases) {
    for (const auto& text : c.texts) check_all_splits(text, c.stops);
  }
}

TEST_CASE("empty feeds change nothing") {
  StopStringMatcher matcher({"ab"});
  CHECK(emits(matcher, {"", "xa", "", "c", ""}) == Pieces{"", "x", "", "ac", ""});
  CHECK_FALSE(matcher.stopped());
}
