#include "engine/grammar/json_fragments.hpp"

#include <boost/json/string.hpp>

#include <map>

#include "engine/base/errors.hpp"
#include "json/json_serialize.hpp"

namespace specd::grammar {
namespace {

CodepointSet chars_of(std::string_view ascii) {
  CodepointSet set;
  for (const char c : ascii) set.add(static_cast<uint8_t>(c));
  return set;
}

// Decodes one UTF-8 code point at text[i], advancing i (the text came from a JSON
// parser, so it is valid UTF-8).
uint32_t next_codepoint(std::string_view text, size_t& i) {
  const auto c = static_cast<uint8_t>(text[i]);
  const int length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  uint32_t cp = length == 1 ? c : c & (0xFF >> (length + 1));
  for (int k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + static_cast<size_t>(k)]) & 0x3F);
  i += static_cast<size_t>(length);
  return cp;
}

}  // namespace

CodepointSet JsonFragments::unescaped_chars() {
  CodepointSet set = CodepointSet::all();
  CodepointSet excluded;
  excluded.add(0, 0x1F);
  excluded.add('"');
  excluded.add('\\');
  set.subtract(excluded);
  return set;
}

std::string JsonFragments::quote(std::string_view utf8) { return serialize_json(boost::json::string(utf8)); }

Fragment JsonFragments::ws() {
  return b_.optional(b_.alternatives(
      {b_.literal(" "),
       b_.sequence({b_.literal("\n"), b_.repeat([&] { return b_.codepoints(chars_of(" \t")); }, 0, kMaxIndent)})}));
}

Fragment JsonFragments::escape() {
  CodepointSet hex;
  hex.add('0', '9');
  hex.add('a', 'f');
  hex.add('A', 'F');
  return b_.sequence(
      {b_.literal("\\"), b_.alternatives({b_.codepoints(chars_of("\"\\/bfnrt")),
                                          b_.sequence({b_.literal("u"), b_.codepoints(hex), b_.codepoints(hex),
                                                       b_.codepoints(hex), b_.codepoints(hex)})})});
}

Fragment JsonFragments::string_char() { return b_.alternatives({b_.codepoints(unescaped_chars()), escape()}); }

Fragment JsonFragments::string(int min_chars, int max_chars) {
  return b_.sequence(
      {b_.literal("\""), b_.repeat([&] { return string_char(); }, min_chars, max_chars), b_.literal("\"")});
}

Fragment JsonFragments::string_except(const std::vector<std::string>& names) {
  // A trie of the names by code point; leaving it by any other character (or an
  // escape) reaches `free`, from which any content may follow.
  struct TrieNode {
    std::map<uint32_t, int> children;
    bool complete = false;
    int32_t state = -1;
  };
  std::vector<TrieNode> trie(1);
  for (const std::string& name : names) {
    int at = 0;
    for (size_t i = 0; i < name.size();) {
      const uint32_t cp = next_codepoint(name, i);
      auto it = trie[static_cast<size_t>(at)].children.find(cp);
      if (it == trie[static_cast<size_t>(at)].children.end()) {
        trie.emplace_back();
        it = trie[static_cast<size_t>(at)].children.emplace(cp, static_cast<int>(trie.size() - 1)).first;
      }
      at = it->second;
    }
    trie[static_cast<size_t>(at)].complete = true;
  }
  const Fragment open = b_.literal("\"");
  const int32_t free = b_.new_state();
  const int32_t end = b_.new_state();
  const Fragment close = b_.literal("\"");
  b_.epsilon(close.end, end);
  b_.epsilon(free, close.start);
  const Fragment loop = string_char();
  b_.epsilon(free, loop.start);
  b_.epsilon(loop.end, free);
  for (TrieNode& t : trie) t.state = b_.new_state();
  b_.epsilon(open.end, trie[0].state);
  for (const TrieNode& t : trie) {
    CodepointSet other = unescaped_chars();
    for (const auto& [cp, child] : t.children) {
      CodepointSet one;
      one.add(cp);
      other.subtract(one);
      const Fragment step = b_.codepoints(one);
      b_.epsilon(t.state, step.start);
      b_.epsilon(step.end, trie[static_cast<size_t>(child)].state);
    }
    const Fragment leave = b_.alternatives({b_.codepoints(other), escape()});
    b_.epsilon(t.state, leave.start);
    b_.epsilon(leave.end, free);
    if (!t.complete) {
      const Fragment stop = b_.literal("\"");
      b_.epsilon(t.state, stop.start);
      b_.epsilon(stop.end, end);
    }
  }
  return {open.start, end};
}

Fragment JsonFragments::integer() {
  CodepointSet digit, nonzero;
  digit.add('0', '9');
  nonzero.add('1', '9');
  return b_.sequence(
      {b_.optional(b_.literal("-")),
       b_.alternatives({b_.literal("0"), b_.sequence({b_.codepoints(nonzero), b_.star(b_.codepoints(digit))})})});
}

Fragment JsonFragments::number() {
  CodepointSet digit;
  digit.add('0', '9');
  const auto digits = [&] { return b_.sequence({b_.codepoints(digit), b_.star(b_.codepoints(digit))}); };
  return b_.sequence({integer(), b_.optional(b_.sequence({b_.literal("."), digits()})),
                      b_.optional(b_.sequence(
                          {b_.codepoints(chars_of("eE")), b_.optional(b_.codepoints(chars_of("+-"))), digits()}))});
}

Fragment JsonFragments::punct(std::string_view text) { return b_.sequence({b_.literal(text), ws()}); }

Fragment JsonFragments::object_body(const std::function<Fragment()>& value) {
  const auto member = [&] { return b_.sequence({string(), ws(), punct(":"), value()}); };
  const auto more = [&] { return b_.sequence({ws(), punct(","), member()}); };
  return b_.sequence({punct("{"), b_.optional(b_.sequence({member(), b_.star(more()), ws()})), b_.literal("}")});
}

Fragment JsonFragments::array_body(const std::function<Fragment()>& value) {
  const auto more = [&] { return b_.sequence({ws(), punct(","), value()}); };
  return b_.sequence({punct("["), b_.optional(b_.sequence({value(), b_.star(more()), ws()})), b_.literal("]")});
}

Fragment JsonFragments::any_value() {
  if (value_rule_ < 0) {
    value_rule_ = b_.declare_rule("json-value");
    const auto call = [&] { return b_.call(value_rule_); };
    b_.define_rule(value_rule_, b_.alternatives({object_body(call), array_body(call), string(), number(),
                                                 b_.literal("true"), b_.literal("false"), b_.literal("null")}));
  }
  return b_.call(value_rule_);
}

Fragment JsonFragments::any_object() {
  return object_body([&] { return any_value(); });
}

}  // namespace specd::grammar
