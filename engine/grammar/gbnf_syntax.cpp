#include "engine/grammar/gbnf_syntax.hpp"

#include <cctype>

#include "engine/base/errors.hpp"
#include "engine/base/utf8.hpp"

namespace specd::grammar {
namespace {

// Repetition bounds above this are refused: each repetition is a copy of the automaton.
constexpr int kMaxRepeat = 10000;
// Parsing and lowering recurse on nesting: bounded so that no text can exhaust the stack.
constexpr int kMaxGroupDepth = 100;
constexpr int kMaxStackedPostfix = 4;

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  GbnfRules parse() {
    GbnfRules out;
    skip_space(true);
    while (!at_end()) {
      const size_t name_at = pos_;
      std::string name = parse_name();
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      skip_space(true);
      GbnfExpr body = parse_alternatives(false);
      if (!at_end() && peek() != '\n' && peek() != '\r') fail(std::string("unexpected '") + peek() + "'");
      if (out.rules.count(name) != 0) {
        pos_ = name_at;
        fail("rule '" + name + "' is defined twice");
      }
      out.order.push_back(name);
      out.rules.emplace(std::move(name), std::move(body));
      skip_space(true);
    }
    return out;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  static bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

  [[noreturn]] void fail(const std::string& message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw SpecdError(ErrorCode::bad_value,
                     "GBNF line " + std::to_string(line) + " column " + std::to_string(column) + ": " + message);
  }

  // Spaces and comments; newlines too where a rule cannot end (nested, after `::=` or `|`).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // A rule continues on a line that starts with `|` (llama.cpp only allows the `|` at a
  // line's end; accepting both costs nothing).
  bool continues_on_next_line() {
    size_t p = pos_;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    if (p < text_.size() && text_[p] == '|' && p != pos_) {
      pos_ = p;
      return true;
    }
    return false;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start)
      fail(at_end() ? "expected a rule name" : std::string("expected a rule name, got '") + peek() + "'");
    return std::string(text_.substr(start, pos_ - start));
  }

  GbnfExpr parse_alternatives(bool nested) {
    GbnfExpr alt;
    alt.kind = GbnfExpr::Kind::alternatives;
    alt.children.push_back(parse_sequence(nested));
    while (peek() == '|' || (!nested && continues_on_next_line())) {
      ++pos_;
      skip_space(true);
      alt.children.push_back(parse_sequence(nested));
    }
    if (alt.children.size() == 1) return std::move(alt.children.front());
    return alt;
  }

  GbnfExpr parse_sequence(bool nested) {
    GbnfExpr seq;
    seq.kind = GbnfExpr::Kind::sequence;
    while (true) {
      skip_space(nested);
      const char c = peek();
      GbnfExpr item;
      if (c == '"') {
        item = parse_literal();
      } else if (c == '[') {
        item = parse_class();
      } else if (c == '.') {
        ++pos_;
        item.kind = GbnfExpr::Kind::char_class;
        item.chars = CodepointSet::all();
      } else if (c == '(') {
        if (++group_depth_ > kMaxGroupDepth) fail("groups nest deeper than " + std::to_string(kMaxGroupDepth));
        ++pos_;
        skip_space(true);
        item = parse_alternatives(true);
        --group_depth_;
        skip_space(true);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
      } else if (is_name_char(c)) {
        item.kind = GbnfExpr::Kind::rule_ref;
        item.text = parse_name();
      } else if (c == '%') {
        item = parse_json_schema();
      } else if (c == '<' || c == '!') {
        fail("token references (<[id]>, !<...>) are not supported");
      } else {
        break;
      }
      seq.children.push_back(parse_postfix(std::move(item)));
    }
    if (seq.children.size() == 1) return std::move(seq.children.front());
    return seq;
  }

  GbnfExpr parse_postfix(GbnfExpr item) {
    for (int stacked = 0;; ++stacked) {
      skip_space(false);
      const char c = peek();
      int min = 0, max = -1;
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
        parse_braces(min, max);
      } else {
        return item;
      }
      if (stacked == kMaxStackedPostfix)
        fail("more than " + std::to_string(kMaxStackedPostfix) + " repetition operators in a row");
      GbnfExpr rep;
      rep.kind = GbnfExpr::Kind::repeat;
      rep.min = min;
      rep.max = max;
      rep.children.push_back(std::move(item));
      item = std::move(rep);
    }
  }

  void parse_braces(int& min, int& max) {
    skip_space(false);
    const bool has_min = std::isdigit(static_cast<unsigned char>(peek())) != 0;
    min = has_min ? parse_int() : 0;
    skip_space(false);
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      max = std::isdigit(static_cast<unsigned char>(peek())) != 0 ? parse_int() : -1;
    } else {
      if (!has_min) fail("expected a number in '{...}'");
      max = min;
    }
    skip_space(false);
    if (peek() != '}') fail("expected '}'");
    ++pos_;
    if (max >= 0 && max < min) fail("repetition maximum is below its minimum");
  }

  int parse_int() {
    long value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek())) != 0) {
      value = value * 10 + (peek() - '0');
      if (value > kMaxRepeat) fail("repetition count above " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    return static_cast<int>(value);
  }

  uint32_t parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      if (std::isxdigit(static_cast<unsigned char>(c)) == 0) fail("expected a hexadecimal digit");
      value = value * 16 +
              static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
      ++pos_;
    }
    return value;
  }

  // One code point of a literal or class, with escapes.
  uint32_t parse_char() {
    if (at_end()) fail("unterminated literal or class");
    const auto c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case 'n':
          return '\n';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '/':
          return static_cast<uint32_t>(e);
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    // A UTF-8 sequence in the grammar text stands for its code point.
    const int length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size()) fail("invalid UTF-8 in grammar text");
    uint32_t cp = length == 1 ? c : c & (0xFF >> (length + 1));
    for (int i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text_[pos_ + i]) & 0x3F);
    pos_ += static_cast<size_t>(length);
    return cp;
  }

  // `%json-schema` and a JSON object, which ends at its matching brace.
  GbnfExpr parse_json_schema() {
    constexpr std::string_view kKeyword = "%json-schema";
    if (text_.substr(pos_, kKeyword.size()) != kKeyword) fail("expected '%json-schema'");
    pos_ += kKeyword.size();
    if (is_name_char(peek())) fail("expected '%json-schema'");
    skip_space(true);
    if (peek() != '{') fail("expected a JSON Schema object after '%json-schema'");
    const size_t start = pos_;
    int depth = 0;
    bool in_string = false;
    for (; !at_end(); ++pos_) {
      const char c = peek();
      if (in_string) {
        if (c == '\\')
          ++pos_;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        if (++depth > kMaxGroupDepth * 10) fail("the JSON Schema nests too deep");
      } else if ((c == '}' || c == ']') && --depth == 0) {
        ++pos_;
        GbnfExpr schema;
        schema.kind = GbnfExpr::Kind::json_schema;
        schema.text = std::string(text_.substr(start, pos_ - start));
        return schema;
      }
    }
    pos_ = start;
    fail("unterminated JSON Schema after '%json-schema'");
  }

  GbnfExpr parse_literal() {
    ++pos_;
    GbnfExpr lit;
    lit.kind = GbnfExpr::Kind::literal;
    while (peek() != '"') {
      if (at_end()) fail("unterminated string literal");
      const uint32_t cp = parse_char();
      if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) fail("literal holds an invalid code point");
      lit.text += utf8_encode(cp);
    }
    ++pos_;
    return lit;
  }

  GbnfExpr parse_class() {
    ++pos_;
    GbnfExpr cls;
    cls.kind = GbnfExpr::Kind::char_class;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range is reversed");
      }
      cls.chars.add(lo, hi);
    }
    ++pos_;
    if (negated) cls.chars = cls.chars.complement();
    return cls;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int group_depth_ = 0;
};

}  // namespace

GbnfRules parse_gbnf(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace specd::grammar
