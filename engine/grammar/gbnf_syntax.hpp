#pragma once
// The GBNF syntax tree (gbnf_parser.cpp parses text into it, gbnf_lowering.cpp turns it
// into automaton fragments). Plain values.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/codepoint_set.hpp"

namespace specd::grammar {

struct GbnfExpr {
  enum class Kind { literal, char_class, rule_ref, sequence, alternatives, repeat, json_schema };
  Kind kind = Kind::sequence;
  std::string text;  // literal: its UTF-8 bytes; rule_ref: the rule's name; json_schema: the schema's JSON
  CodepointSet chars;
  std::vector<GbnfExpr> children;
  int min = 0;
  int max = -1;  // repeat; -1 is unbounded
};

struct GbnfRules {
  std::map<std::string, GbnfExpr, std::less<>> rules;
  std::vector<std::string> order;  // names in the order they were defined
};

GbnfRules parse_gbnf(std::string_view text);

}  // namespace specd::grammar
