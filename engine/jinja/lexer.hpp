#pragma once
// Template text to tokens, as Jinja2's lexer splits it: text between tags (after the
// whitespace control of `{%-`, `-%}`, trim_blocks and lstrip_blocks), and inside tags
// names, literals and operators. Newlines are normalised to \n and one trailing newline
// is dropped (Jinja2's keep_trailing_newline=False).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace specd::jinja {

enum class TokenType : uint8_t {
  text,
  variable_begin,
  variable_end,
  block_begin,
  block_end,
  name,
  string,
  integer,
  floating,
  op,
  eof,
};

struct Token {
  TokenType type;
  int line;
  std::string text;  // text data, name, decoded string literal or operator
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexerOptions {
  bool trim_blocks = true;  // transformers sets both
  bool lstrip_blocks = true;
};

// Throws TemplateError(syntax) naming the line of an unterminated tag or bad literal.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace specd::jinja
