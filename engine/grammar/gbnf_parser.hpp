#pragma once
// llama.cpp's GBNF grammar text (grammars/README.md in llama.cpp): `name ::= ...` rules,
// `|`, grouping, `*` `+` `?` `{m}` `{m,}` `{m,n}` `{,n}`, string literals and character
// classes with escapes (\xHH \uHHHH \UHHHHHHHH \t \n \r \\ \" \[ \] \-), `[^...]`, `.`,
// `#` comments. Classes and `.` match one UTF-8 encoded code point, as in llama.cpp.
// specd's one extension: `%json-schema {...}` stands for the JSON values a JSON Schema
// object admits (json_schema_compiler.hpp's subset, its refusals naming the keyword), so
// a grammar can wrap schema-shaped JSON in other text (tool calls: net/tool_call_grammar).
// Parse errors, undefined rules and left recursion are SpecdError bad_value naming the
// line and column or the rule.
#include <string_view>

#include "engine/grammar/byte_grammar.hpp"

namespace specd::grammar {

ByteGrammar compile_gbnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace specd::grammar
