// GBNF text to the byte-level automaton: llama.cpp's syntax, the example grammars
// (written for these tests in tests/data/grammar/), UTF-8 classes, repetition bounds,
// and the refusals (syntax errors with line and column, undefined rules, left recursion).
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_matcher.hpp"

namespace g = specd::grammar;

namespace {

std::shared_ptr<const g::ByteGrammar> gbnf(const std::string& text) {
  return std::make_shared<const g::ByteGrammar>(g::compile_gbnf(text));
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SPECD_SOURCE_DIR) + "/tests/data/grammar/" + name);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The whole text is a sentence of the grammar.
bool matches(const std::shared_ptr<const g::ByteGrammar>& grammar, const std::string& text) {
  g::GrammarMatcher m(grammar);
  return m.accept_bytes(text) && m.can_end();
}

// The text can be extended to a sentence (every prefix of a sentence is).
bool prefix_ok(const std::shared_ptr<const g::ByteGrammar>& grammar, const std::string& text) {
  g::GrammarMatcher m(grammar);
  return m.accept_bytes(text);
}

std::string refusal(const std::string& text) {
  try {
    g::compile_gbnf(text);
  } catch (const specd::SpecdError& e) {
    CHECK(e.code() == specd::ErrorCode::bad_value);
    return e.message();
  }
  return "(compiled)";
}

}  // namespace

TEST_CASE("the JSON example grammar accepts JSON objects and rejects non-JSON") {
  const auto grammar = gbnf(fixture("json.gbnf"));
  CHECK(matches(grammar, R"({"a": [1, 2.5e3, "x\n", true], "b": {"c": null}})"));
  CHECK(matches(grammar, "{}"));
  CHECK(matches(grammar, "{\n  \"k\": \"\\u00e9t\xc3\xa9\"\n}"));
  CHECK_FALSE(matches(grammar, R"({"a": })"));
  CHECK_FALSE(matches(grammar, R"({'a': 1})"));
  CHECK_FALSE(matches(grammar, R"({"a": [1,]})"));
  CHECK_FALSE(matches(grammar, "[1]"));                // root is an object
  CHECK_FALSE(matches(grammar, "{\"a\": \"\x01\"}"));  // control character in a string
  CHECK_FALSE(matches(grammar, "{\"a\": \"\x7f\"}"));  // excluded by the class
  CHECK_FALSE(matches(grammar, R"({"a": 1})"
                               "\n"
                               "                      "));  // 22 > 20 indent
  CHECK(prefix_ok(grammar, R"({"a": [1, 2)"));
  CHECK_FALSE(prefix_ok(grammar, R"({"a": [1, 2]])"));
}

TEST_CASE("the arithmetic example grammar: lines of expression = term") {
  const auto grammar = gbnf(fixture("arithmetic.gbnf"));
  CHECK(matches(grammar, "a+b=c\n"));
  CHECK(matches(grammar, "(x1 *42)/y = 7\nz=(q)\n"));
  CHECK_FALSE(matches(grammar, "x * 4=y\n"));  // no space may follow an operator
  CHECK_FALSE(matches(grammar, "a+=b\n"));
  CHECK_FALSE(matches(grammar, "1+2\n"));
  CHECK_FALSE(matches(grammar, "a=b"));  // the newline is required
  CHECK(prefix_ok(grammar, "((a"));
}

TEST_CASE("the list example grammar: dash items on their own lines") {
  const auto grammar = gbnf(fixture("list.gbnf"));
  CHECK(matches(grammar, "- one\n- two \xe2\x9c\x93\n"));
  CHECK_FALSE(matches(grammar, "- \n"));
  CHECK_FALSE(matches(grammar, "* x\n"));
  CHECK_FALSE(matches(grammar,
                      "- a\xe2\x80\xa8"
                      "b\n"));  // U+2028 is excluded
  CHECK_FALSE(matches(grammar, ""));
}

TEST_CASE("repetition bounds {m}, {m,}, {m,n} and {,n}") {
  const auto exact = gbnf(R"(root ::= "a"{2})");
  CHECK(matches(exact, "aa"));
  CHECK_FALSE(matches(exact, "a"));
  CHECK_FALSE(matches(exact, "aaa"));
  const auto range = gbnf(R"(root ::= "a"{2,3} "b")");
  CHECK(matches(range, "aab"));
  CHECK(matches(range, "aaab"));
  CHECK_FALSE(matches(range, "ab"));
  CHECK_FALSE(matches(range, "aaaab"));
  const auto at_least = gbnf(R"(root ::= "a"{2,})");
  CHECK(matches(at_least, std::string(50, 'a')));
  CHECK_FALSE(matches(at_least, "a"));
  const auto at_most = gbnf(R"(root ::= "x" "a"{,2})");
  CHECK(matches(at_most, "x"));
  CHECK(matches(at_most, "xaa"));
  CHECK_FALSE(matches(at_most, "xaaa"));
  const auto ops = gbnf("root ::= \"a\"+ \"b\"? \"c\"*");
  CHECK(matches(ops, "a"));
  CHECK(matches(ops, "aabccc"));
  CHECK_FALSE(matches(ops, "bc"));
  CHECK_FALSE(matches(ops, "abb"));
}

TEST_CASE("classes and dot match one UTF-8 encoded code point") {
  const auto hiragana = gbnf("root ::= [ぁ-ゟ]+");
  CHECK(matches(hiragana, "ひらがな"));
  CHECK_FALSE(matches(hiragana, "カ"));        // katakana
  CHECK_FALSE(matches(hiragana, "\xe3\x81"));  // a cut sequence
  const auto dot = gbnf("root ::= . .");
  CHECK(matches(dot, "a\xc3\xa9"));
  CHECK(matches(dot, "\xf0\x9f\x98\x80z"));
  CHECK_FALSE(matches(dot,
                      "\xff"
                      "a"));  // not UTF-8
  CHECK_FALSE(matches(dot,
                      "\xed\xa0\x80"
                      "a"));  // an encoded surrogate
  CHECK_FALSE(matches(dot,
                      "\xc0\xaf"
                      "a"));  // an overlong encoding
  const auto negated = gbnf(R"(root ::= [^a-c\n]{2})");
  CHECK(matches(negated, "d\xc3\xa9"));
  CHECK_FALSE(matches(negated, "ab"));
  CHECK_FALSE(matches(negated, "d\n"));
}

TEST_CASE("literal escapes, comments, grouping and rules across lines") {
  const auto grammar = gbnf(
      "# leading comment\n"
      "root ::= greeting (\", \" name)* # trailing comment\n"
      "greeting ::= \"\\x48i\\u00e9\" | \"Yo\\n\"\n"
      "name ::= [A-Z] [a-z]*\n"
      "  | \"\\\"q\\\"\"\n");
  CHECK(matches(grammar, "Hi\xc3\xa9"));
  CHECK(matches(grammar, "Yo\n, Ann, \"q\""));
  CHECK_FALSE(matches(grammar, "Hie"));
  CHECK_FALSE(matches(grammar, "Hi\xc3\xa9, ann"));
}

TEST_CASE("refusals name the line and column or the rule") {
  CHECK(refusal("root ::= \"abc") == "GBNF line 1 column 14: unterminated string literal");
  CHECK(refusal("root ::= \"a\"\nbad ::= [b-a]") == "GBNF line 2 column 13: character range is reversed");
  CHECK(refusal("root ::= thing") == "GBNF rule 'root' uses undefined rule 'thing'");
  CHECK(refusal("item ::= \"a\"") == "GBNF grammar has no rule named 'root'");
  CHECK(refusal("root ::= root \"a\" | \"b\"") ==
        "grammar rule 'root' is left-recursive (it can enter itself before reading a byte)");
  CHECK(refusal("root ::= x\nx ::= y? x \"b\" | \"c\"\ny ::= \"d\"") ==
        "grammar rule 'x' is left-recursive (it can enter itself before reading a byte)");
  CHECK(refusal("root ::= \"a\" )") == "GBNF line 1 column 14: unexpected ')'");
  CHECK(refusal("root ::= \"a\"\nroot ::= \"b\"") == "GBNF line 2 column 1: rule 'root' is defined twice");
  CHECK(refusal("root ::= \"a\"{3,2}") == "GBNF line 1 column 18: repetition maximum is below its minimum");
  CHECK(refusal("root ::= <[1000]>") == "GBNF line 1 column 10: token references (<[id]>, !<...>) are not supported");
  CHECK(refusal("root ::= [^\\x00-\\U0010FFFF]") == "the grammar accepts no input at all");
}

TEST_CASE("right recursion is allowed and nests through the stack") {
  const auto grammar = gbnf("root ::= \"(\" root \")\" | \"x\"");
  CHECK(matches(grammar, "x"));
  CHECK(matches(grammar, "((((x))))"));
  CHECK_FALSE(matches(grammar, "((x)"));
  CHECK_FALSE(matches(grammar, "(x))"));
}

TEST_CASE("an exponentially ambiguous grammar is refused, not followed into memory exhaustion") {
  // Each "x" opens a parse with or without a pending "y": 2^n stacks after n bytes.
  const auto grammar = gbnf("root ::= a\na ::= \"x\" a | \"x\" a \"y\" | \"z\"");
  g::GrammarMatcher small(grammar);
  CHECK(small.accept_bytes("xxxzyy"));
  CHECK(small.can_end());
  CHECK_FALSE(small.too_ambiguous());
  g::GrammarMatcher m(grammar);
  const g::GrammarMatcher before = m;
  CHECK(m.accept_bytes(std::string(13, 'x')));  // 2^13 = 8192 parses: within the bound
  CHECK_FALSE(m.too_ambiguous());
  // A refusal the matcher remembers (nothing throws into a round), seen by its copies' shared flag.
  CHECK_FALSE(m.accept_bytes("x"));
  CHECK(m.too_ambiguous());
  CHECK(m.steps() == 1);
  CHECK(before.copies_too_ambiguous());
  CHECK_FALSE(before.too_ambiguous());
  CHECK(g::GrammarMatcher::too_ambiguous_message() ==
        "the grammar is too ambiguous: more than 10000 parses are open at once");
}

TEST_CASE("nesting and size limits are refusals, not stack or memory exhaustion") {
  CHECK(refusal("root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')')) ==
        "GBNF line 1 column 110: groups nest deeper than 100");
  CHECK(refusal("root ::= \"a\"" + std::string(10000, '?')) ==
        "GBNF line 1 column 18: more than 4 repetition operators in a row");
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 300; ++i) chain += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  chain += "r300 ::= \"y\"\n";
  CHECK(refusal(chain) == "GBNF rules nest deeper than 200 (at rule 'r200')");
  CHECK(refusal("root ::= ((\"a\" \"b\"){1000}){1000}") ==
        "the grammar is too large (more than 400000 automaton states)");
  CHECK(refusal("root ::= ([a-z]{1000} \"x\"){70}") ==
        "the grammar is too large (70071 automaton states; the limit is 60000)");
}

TEST_CASE("%json-schema: a rule that is a JSON Schema, wrapped in GBNF text; its refusals name the keyword") {
  const auto g = gbnf(
      "root ::= \"<x>\" args \"</x>\"\n"
      "args ::= %json-schema {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"},\n"
      "  \"s\": {\"enum\": [\"a}\", \"b\\\"\"]}}, \"required\": [\"n\"], \"additionalProperties\": false}\n");
  CHECK(matches(g, R"(<x>{"n": 4}</x>)"));
  CHECK(matches(g, R"(<x>{"n":-1,"s":"a}"}</x>)"));  // a brace inside a string does not end the schema
  CHECK(matches(g, R"(<x>{"n": 0, "s": "b\""}</x>)"));
  CHECK_FALSE(matches(g, R"(<x>{"s": "a}"}</x>)"));  // n is required
  CHECK_FALSE(matches(g, R"(<x>{"n": 1.5}</x>)"));
  CHECK_FALSE(matches(g, R"(<x>{"n": 1, "t": 2}</x>)"));
  CHECK_FALSE(matches(g, R"(<x>{"n": 1} </x>)"));  // no whitespace after the value: the GBNF says where it goes
  CHECK_FALSE(matches(g, R"({"n": 1})"));

  // $ref resolves inside the embedded schema's own document.
  const auto refs = gbnf(
      "root ::= a \";\" a\n"
      "a ::= %json-schema {\"$defs\": {\"p\": {\"type\": \"boolean\"}}, \"type\": \"array\", \"items\": "
      "{\"$ref\": \"#/$defs/p\"}}\n");
  CHECK(matches(refs, "[true];[false, true]"));
  CHECK_FALSE(matches(refs, "[1];[]"));

  auto message = [](const std::string& text) {
    try {
      (void)g::compile_gbnf(text);
    } catch (const specd::SpecdError& e) {
      CHECK(e.code() == specd::ErrorCode::bad_value);
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  CHECK(message("root ::= %json-schema {\"type\": \"integer\", \"minimum\": 3}")
            .find("unsupported JSON Schema keyword 'minimum' at #") != std::string::npos);
  CHECK(message("root ::= %json-schema {\"type\": ").find("unterminated JSON Schema") != std::string::npos);
  CHECK(message("root ::= %json-schema [1]").find("expected a JSON Schema object") != std::string::npos);
  CHECK(message("root ::= %json {}").find("expected '%json-schema'") != std::string::npos);
  CHECK(message("root ::= %json-schema {\"type\": \"object\",}").find("not valid JSON") != std::string::npos);
}
