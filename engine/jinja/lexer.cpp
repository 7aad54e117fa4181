#include "engine/jinja/lexer.hpp"

#include <cstring>

#include "engine/jinja/python_text.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a string literal's body, as Jinja2 applies it.
std::string unescape(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out += e;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        int n = 0;
        while (n < digits && i + 1 < body.size() && hex_value(body[i + 1]) >= 0) {
          cp = cp * 16 + hex_value(body[++i]);
          ++n;
        }
        if (n != digits) throw TemplateError(ErrorKind::syntax, "truncated \\" + std::string(1, e) + " escape");
        append_utf8(out, cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = e - '0';
          for (int n = 1; n < 3 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++n) {
            cp = cp * 8 + (body[++i] - '0');
          }
          append_utf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        push_text(src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      std::string text = src_.substr(pos_, tag - pos_);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && options_.lstrip_blocks && kind != '{') {
        lstrip_last_line(text);
      }
      push_text(std::move(text), pos_);
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        comment(tag);
      } else if (kind == '%' && raw_block(tag)) {
        continue;
      } else {
        tag_tokens(kind == '%', tag);
      }
    }
    tokens_.push_back(Token{TokenType::eof, line_at(src_.size()), ""});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  void lstrip_last_line(std::string& text) const {
    size_t l_pos = text.rfind('\n');
    l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
    if (l_pos == 0 && !line_starting_) return;
    if (l_pos == text.size()) return;
    for (size_t i = l_pos; i < text.size(); ++i) {
      if (!is_space(text[i])) return;
    }
    text.resize(l_pos);
  }

  int line_at(size_t pos) {
    for (; counted_ < pos && counted_ < src_.size(); ++counted_) line_ += src_[counted_] == '\n';
    return line_;
  }

  void push_text(std::string text, size_t at) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::text, line_at(at), std::move(text)});
  }

  [[noreturn]] void fail(const std::string& message, size_t at) {
    throw TemplateError(ErrorKind::syntax, message, line_at(at));
  }

  // After a tag's closing characters: `-` eats all whitespace, a plain end eats one
  // newline under trim_blocks, `+` keeps everything.
  void after_tag_end(size_t end, char sign) {
    pos_ = end;
    if (sign == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (sign != '+' && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void comment(size_t tag) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail("Missing end of comment tag", tag);
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    after_tag_end(end + 2, sign);
  }

  // {% raw %}...{% endraw %}: the body is text, tags and all.
  bool raw_block(size_t tag) {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    char sign = 0;
    if (p < src_.size() && src_[p] == '-') sign = '-', ++p;
    if (src_.compare(p, 2, "%}") != 0) return false;
    size_t body = p + 2;
    if (sign == '-') {
      while (body < src_.size() && is_space(src_[body])) ++body;
    }
    for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      char open_sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r++] : 0;
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char close_sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r++] : 0;
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, q - body);
      if (open_sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (open_sign != '+' && options_.lstrip_blocks) {
        lstrip_last_line(text);
      }
      push_text(std::move(text), body);
      after_tag_end(r + 2, close_sign);
      return true;
    }
    fail("Missing end of raw directive", tag);
  }

  void tag_tokens(bool block, size_t tag) {
    tokens_.push_back(Token{block ? TokenType::block_begin : TokenType::variable_begin, line_at(tag), ""});
    std::string balance;
    const char* end = block ? "%}" : "}}";
    while (true) {
      if (pos_ >= src_.size())
        fail(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'", tag);
      if (balance.empty()) {
        char sign = src_[pos_] == '-' || (block && src_[pos_] == '+') ? src_[pos_] : 0;
        size_t at = pos_ + (sign ? 1 : 0);
        if (src_.compare(at, 2, end) == 0) {
          tokens_.push_back(Token{block ? TokenType::block_end : TokenType::variable_end, line_at(pos_), ""});
          if (block) {
            after_tag_end(at + 2, sign);
          } else {
            after_tag_end(at + 2, sign ? sign : '+');
          }
          return;
        }
      }
      char c = src_[pos_];
      if (is_space(c)) {
        ++pos_;
      } else if (is_digit(c)) {
        number();
      } else if (is_name_start(c)) {
        size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        tokens_.push_back(Token{TokenType::name, line_at(start), src_.substr(start, pos_ - start)});
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        op(balance);
      }
    }
  }

  void number() {
    size_t start = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() &&
             (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))))
        ++pos_;
    };
    bool after_dot = start > 0 && src_[start - 1] == '.';
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() &&
        (src_[pos_ + 1] == 'x' || src_[pos_ + 1] == 'o' || src_[pos_ + 1] == 'b')) {
      int base = src_[pos_ + 1] == 'x' ? 16 : src_[pos_ + 1] == 'o' ? 8 : 2;
      pos_ += 2;
      int64_t v = 0;
      while (pos_ < src_.size() && (hex_value(src_[pos_]) >= 0 || src_[pos_] == '_')) {
        if (src_[pos_] != '_') v = v * base + hex_value(src_[pos_]);
        ++pos_;
      }
      push_int(v, start);
      return;
    }
    digits();
    bool is_float = false;
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      ++pos_;
      digits();
      is_float = true;
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (pos_ < src_.size() && is_digit(src_[pos_])) {
        digits();
        is_float = true;
      } else {
        pos_ = save;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    if (is_float) {
      Token t{TokenType::floating, line_at(start), text};
      t.float_value = std::strtod(text.c_str(), nullptr);
      tokens_.push_back(std::move(t));
    } else {
      push_int(std::strtoll(text.c_str(), nullptr, 10), start);
    }
  }

  void push_int(int64_t v, size_t start) {
    Token t{TokenType::integer, line_at(start), src_.substr(start, pos_ - start)};
    t.int_value = v;
    tokens_.push_back(std::move(t));
  }

  void string_literal(char quote) {
    size_t start = pos_++;
    while (pos_ < src_.size() && src_[pos_] != quote) {
      pos_ += src_[pos_] == '\\' ? 2 : 1;
    }
    if (pos_ >= src_.size()) fail("unexpected end of string", start);
    ++pos_;
    int line = line_at(start);
    try {
      tokens_.push_back(
          Token{TokenType::string, line, unescape(std::string_view(src_).substr(start + 1, pos_ - start - 2))});
    } catch (const TemplateError& e) {
      throw e.with_line(line);
    }
  }

  void op(std::string& balance) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* two : kTwo) {
      if (src_.compare(pos_, 2, two) == 0) {
        tokens_.push_back(Token{TokenType::op, line_at(pos_), two});
        pos_ += 2;
        return;
      }
    }
    char c = src_[pos_];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c)) fail(std::string("unexpected char '") + c + "'", pos_);
    if (c == '(' || c == '[' || c == '{') {
      balance += c == '(' ? ')' : c == '[' ? ']' : '}';
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(std::string("unexpected '") + c + "'", pos_);
      if (balance.back() != c) fail(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", pos_);
      balance.pop_back();
    }
    tokens_.push_back(Token{TokenType::op, line_at(pos_), std::string(1, c)});
    ++pos_;
  }

  std::string src_;
  LexerOptions options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t counted_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace specd::jinja
