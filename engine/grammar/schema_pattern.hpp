#pragma once
// JSON Schema `pattern` (an ECMA-262 regex, matched anywhere in the string unless
// anchored) compiled to a fragment for a JSON string's content. Supported: literals,
// `.`, classes with ranges and negation, \d \D \w \W \s \S and the usual escapes,
// groups (capturing and (?:)), `|`, `*` `+` `?` `{n}` `{n,}` `{n,m}` (lazy forms too),
// `^` and `$` at a branch's ends. Characters JSON must escape are not generated inside
// a constrained part. Anything else (lookaround, backreferences, \b) is SpecdError
// bad_value naming `pattern` and the schema location.
#include <string>
#include <string_view>

#include "engine/grammar/grammar_builder.hpp"

namespace specd::grammar {

class JsonFragments;

// The content between the quotes; `pointer` names the schema location in errors.
Fragment compile_pattern(GrammarBuilder& builder, JsonFragments& json, std::string_view pattern,
                         const std::string& pointer);

}  // namespace specd::grammar
