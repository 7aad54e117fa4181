#include "engine/grammar/schema_pattern.hpp"

#include <cctype>

#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_syntax.hpp"
#include "engine/grammar/json_fragments.hpp"

namespace specd::grammar {
namespace {

constexpr int kMaxRepeat = 1000;

CodepointSet range(uint32_t lo, uint32_t hi) {
  CodepointSet s;
  s.add(lo, hi);
  return s;
}

CodepointSet digits() { return range('0', '9'); }
CodepointSet word_chars() {
  CodepointSet s = range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_');
  return s;
}
CodepointSet space_chars() {
  CodepointSet s;
  for (const uint32_t c : {0x20u, 0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu,
                           0x3000u, 0xFEFFu}) {
    s.add(c);
  }
  s.add(0x2000, 0x200A);
  return s;
}

class PatternParser {
 public:
  PatternParser(std::string_view text, const std::string& pointer) : text_(text), pointer_(pointer) {}

  // Top-level branches, each with its anchors.
  struct Branch {
    GbnfExpr body;
    bool anchored_start = false;
    bool anchored_end = false;
  };
  std::vector<Branch> parse() {
    std::vector<Branch> out;
    while (true) {
      Branch b;
      if (peek() == '^') {
        ++pos_;
        b.anchored_start = true;
      }
      b.body = parse_sequence(true, b.anchored_end);
      out.push_back(std::move(b));
      if (at_end()) return out;
      if (peek() != '|') fail("unexpected ')'");
      ++pos_;
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  [[noreturn]] void fail(const std::string& what) const {
    throw SpecdError(ErrorCode::bad_value, "unsupported JSON Schema keyword 'pattern' at #" + pointer_ + ": " + what +
                                               " in /" + std::string(text_) + "/");
  }

  GbnfExpr parse_alternatives() {
    GbnfExpr alt;
    alt.kind = GbnfExpr::Kind::alternatives;
    bool unused = false;
    alt.children.push_back(parse_sequence(false, unused));
    while (peek() == '|') {
      ++pos_;
      alt.children.push_back(parse_sequence(false, unused));
    }
    return alt;
  }

  GbnfExpr parse_sequence(bool top, bool& anchored_end) {
    GbnfExpr seq;
    seq.kind = GbnfExpr::Kind::sequence;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (!top || !(at_end() || peek() == '|')) fail("'$' before the end of the pattern");
        anchored_end = true;
        break;
      }
      if (peek() == '^') fail("'^' after the start of the pattern");
      seq.children.push_back(parse_quantified(parse_atom()));
    }
    return seq;
  }

  GbnfExpr chars(CodepointSet set) {
    GbnfExpr e;
    e.kind = GbnfExpr::Kind::char_class;
    e.chars = std::move(set);
    return e;
  }

  GbnfExpr parse_atom() {
    const char c = peek();
    if (c == '(') {
      if (++group_depth_ > 100) fail("groups nested deeper than 100");
      ++pos_;
      if (peek() == '?') {
        if (text_.substr(pos_, 2) != "?:") fail("lookaround or named group");
        pos_ += 2;
      }
      GbnfExpr inner = parse_alternatives();
      if (peek() != ')') fail("unbalanced '('");
      ++pos_;
      --group_depth_;
      return inner;
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      CodepointSet any = CodepointSet::all();
      CodepointSet line_ends;
      for (const uint32_t e : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) line_ends.add(e);
      any.subtract(line_ends);
      return chars(any);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail(std::string("nothing to repeat before '") + c + "'");
    return chars(parse_char(false));
  }

  uint32_t parse_hex(int count) {
    uint32_t v = 0;
    for (int i = 0; i < count; ++i) {
      const char h = peek();
      if (std::isxdigit(static_cast<unsigned char>(h)) == 0) fail("bad hexadecimal escape");
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      ++pos_;
    }
    return v;
  }

  // One character or shorthand class, escapes included.
  CodepointSet parse_char(bool in_class) {
    const auto c = static_cast<uint8_t>(peek());
    if (c != '\\') {
      const int length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      uint32_t cp = length == 1 ? c : c & (0xFF >> (length + 1));
      for (int k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text_[pos_ + k]) & 0x3F);
      pos_ += static_cast<size_t>(length);
      return range(cp, cp);
    }
    ++pos_;
    if (at_end()) fail("pattern ends with '\\'");
    const char e = peek();
    ++pos_;
    switch (e) {
      case 'd':
        return digits();
      case 'D':
        return digits().complement();
      case 'w':
        return word_chars();
      case 'W':
        return word_chars().complement();
      case 's':
        return space_chars();
      case 'S':
        return space_chars().complement();
      case 'n':
        return range('\n', '\n');
      case 't':
        return range('\t', '\t');
      case 'r':
        return range('\r', '\r');
      case 'f':
        return range('\f', '\f');
      case 'v':
        return range('\v', '\v');
      case '0':
        return range(0, 0);
      case 'x': {
        const uint32_t v = parse_hex(2);
        return range(v, v);
      }
      case 'u': {
        const uint32_t v = parse_hex(4);
        return range(v, v);
      }
      case 'b':
        if (in_class) return range('\b', '\b');
        fail("word boundary \\b");
      default:
        if (std::isalnum(static_cast<unsigned char>(e)) != 0) fail(std::string("escape \\") + e);
        return range(static_cast<uint8_t>(e), static_cast<uint8_t>(e));
    }
  }

  GbnfExpr parse_class() {
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet set;
    bool first = true;
    while (first || peek() != ']') {
      first = false;
      if (at_end()) fail("unterminated '['");
      const CodepointSet lo = parse_char(true);
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        const CodepointSet hi = parse_char(true);
        if (lo.ranges().size() != 1 || hi.ranges().size() != 1 || lo.ranges()[0].lo != lo.ranges()[0].hi ||
            hi.ranges()[0].lo != hi.ranges()[0].hi || hi.ranges()[0].lo < lo.ranges()[0].lo) {
          fail("bad class range");
        }
        set.add(lo.ranges()[0].lo, hi.ranges()[0].lo);
      } else {
        set.add(lo);
      }
    }
    ++pos_;
    return chars(negated ? set.complement() : set);
  }

  int parse_int() {
    if (std::isdigit(static_cast<unsigned char>(peek())) == 0) fail("expected a number in '{}'");
    long v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek())) != 0) {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail("repetition above " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    return static_cast<int>(v);
  }

  GbnfExpr parse_quantified(GbnfExpr atom) {
    int min = 0, max = -1;
    const char c = peek();
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{') {
      ++pos_;
      min = parse_int();
      max = min;
      if (peek() == ',') {
        ++pos_;
        max = peek() == '}' ? -1 : parse_int();
      }
      if (peek() != '}') fail("unterminated '{'");
      ++pos_;
      if (max >= 0 && max < min) fail("repetition maximum below minimum");
    } else {
      return atom;
    }
    if (peek() == '?') ++pos_;  // lazy: the same set of strings
    if (peek() == '*' || peek() == '+' || peek() == '{') fail("repeated quantifier");
    GbnfExpr rep;
    rep.kind = GbnfExpr::Kind::repeat;
    rep.min = min;
    rep.max = max;
    rep.children.push_back(std::move(atom));
    return rep;
  }

  std::string_view text_;
  const std::string& pointer_;
  size_t pos_ = 0;
  int group_depth_ = 0;
};

Fragment lower(GrammarBuilder& b, const GbnfExpr& e, const CodepointSet& allowed) {
  switch (e.kind) {
    case GbnfExpr::Kind::char_class: {
      CodepointSet set = e.chars;
      set.subtract(allowed.complement());
      return set.empty() ? b.nothing() : b.codepoints(set);
    }
    case GbnfExpr::Kind::repeat:
      return b.repeat([&] { return lower(b, e.children.front(), allowed); }, e.min, e.max);
    case GbnfExpr::Kind::alternatives: {
      std::vector<Fragment> parts;
      for (const GbnfExpr& c : e.children) parts.push_back(lower(b, c, allowed));
      return b.alternatives(parts);
    }
    default: {
      std::vector<Fragment> parts;
      for (const GbnfExpr& c : e.children) parts.push_back(lower(b, c, allowed));
      return b.sequence(parts);
    }
  }
}

}  // namespace

Fragment compile_pattern(GrammarBuilder& builder, JsonFragments& json, std::string_view pattern,
                         const std::string& pointer) {
  const CodepointSet allowed = JsonFragments::unescaped_chars();
  std::vector<Fragment> branches;
  for (const auto& branch : PatternParser(pattern, pointer).parse()) {
    std::vector<Fragment> parts;
    if (!branch.anchored_start) parts.push_back(builder.star(json.string_char()));
    parts.push_back(lower(builder, branch.body, allowed));
    if (!branch.anchored_end) parts.push_back(builder.star(json.string_char()));
    branches.push_back(builder.sequence(parts));
  }
  return builder.alternatives(branches);
}

}  // namespace specd::grammar
