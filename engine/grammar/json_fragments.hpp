#pragma once
// The lexical pieces of JSON as automaton fragments, shared by the JSON Schema compiler
// and the "any JSON object" grammar. Each call builds fresh states in the builder.
//
// Whitespace: a gap between tokens is empty, one space, or one newline followed by up
// to 20 spaces or tabs (the bound llama.cpp's JSON-schema grammars use). That admits the
// compact form, json.dumps' ", " and ": ", and pretty-printing up to 20 columns of
// indent, and it bounds every gap at 21 bytes, so a model cannot emit whitespace
// forever and each gap is a short chain of states.
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_builder.hpp"

namespace specd::grammar {

inline constexpr int kMaxIndent = 20;

class JsonFragments {
 public:
  explicit JsonFragments(GrammarBuilder& builder) : b_(builder) {}

  Fragment ws();
  Fragment string_char();  // one unescaped character or one escape sequence
  Fragment string(int min_chars = 0, int max_chars = -1);
  // A string whose content is none of `names` spelled literally (an object's extra keys).
  Fragment string_except(const std::vector<std::string>& names);
  Fragment integer();
  Fragment number();
  Fragment punct(std::string_view text);  // text with a gap after it
  // "any JSON value" (a rule, declared once and called: values nest).
  Fragment any_value();
  Fragment any_object();

  static CodepointSet unescaped_chars();
  // The JSON text of a string value with the escapes JSON requires, in quotes (the
  // project's one JSON writer, json/json_serialize.hpp).
  static std::string quote(std::string_view utf8);

 private:
  Fragment escape();
  Fragment object_body(const std::function<Fragment()>& value);
  Fragment array_body(const std::function<Fragment()>& value);

  GrammarBuilder& b_;
  int32_t value_rule_ = -1;
};

}  // namespace specd::grammar
