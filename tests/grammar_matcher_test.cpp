// The matcher's state handling without a vocabulary: rollback equals never having
// accepted, copies are independent, forced bytes stop at the first choice, and
// termination.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace g = specd::grammar;

namespace {

std::shared_ptr<const g::ByteGrammar> gbnf(const std::string& text) {
  return std::make_shared<const g::ByteGrammar>(g::compile_gbnf(text));
}

// Which of a fixed set of probes the matcher's state can read next, as a string of 0/1.
std::string signature(const g::GrammarMatcher& m) {
  static const std::string probes[] = {"a", "b", "(", ")", "\"", "}", ",", " ", "1", "x"};
  std::string out;
  for (const std::string& p : probes) {
    g::GrammarMatcher copy = m;
    out += copy.accept_bytes(p) ? '1' : '0';
  }
  return out + (m.can_end() ? "E" : "-");
}

}  // namespace

TEST_CASE("rollback returns to exactly the state before the rolled-back steps") {
  const auto grammar = gbnf("root ::= \"(\" root \")\" | [ab]+");
  g::GrammarMatcher m(grammar);
  REQUIRE(m.accept_bytes("(("));
  const std::string before = signature(m);
  REQUIRE(m.accept_bytes("a"));
  REQUIRE(m.accept_bytes("b)"));
  REQUIRE(m.accept_bytes(")"));
  CHECK(m.can_end());
  CHECK(m.steps() == 4);
  m.rollback(3);
  CHECK(m.steps() == 1);
  CHECK(signature(m) == before);
  CHECK(signature(m) == "1110000000-");
  // The same steps again reach the same end, and other ones are possible instead.
  REQUIRE(m.accept_bytes("ba))"));
  CHECK(m.can_end());
  m.rollback(1);
  CHECK_FALSE(m.accept_bytes(")))"));  // refused: nothing changes
  CHECK(m.steps() == 1);
  CHECK_THROWS_AS(m.rollback(2), specd::SpecdError);
}

TEST_CASE("a copied matcher advances independently of the original") {
  const auto grammar = gbnf("root ::= [a-z]+ \"!\"");
  g::GrammarMatcher m(grammar);
  REQUIRE(m.accept_bytes("ab"));
  g::GrammarMatcher copy = m;
  REQUIRE(copy.accept_bytes("c!"));
  CHECK(copy.can_end());
  CHECK_FALSE(m.can_end());
  CHECK(m.accept_bytes("!"));
  CHECK(m.can_end());
  g::GrammarMatcher assigned(grammar);
  assigned = copy;
  copy.rollback(1);
  CHECK(assigned.can_end());
  CHECK_FALSE(copy.can_end());
}

TEST_CASE("forced bytes run to the first choice and stop where the grammar can end") {
  const auto grammar = gbnf(R"(root ::= "{\"name\": \"" [a-z]+ "\", \"age\": " [0-9]+ "}")");
  g::GrammarMatcher m(grammar);
  CHECK(m.forced_bytes() == "{\"name\": \"");
  CHECK(m.steps() == 0);  // forced_bytes does not advance
  REQUIRE(m.accept_bytes("{\"name\": \"bo"));
  CHECK(m.forced_bytes().empty());  // another letter or the quote
  REQUIRE(m.accept_bytes("\""));
  CHECK(m.forced_bytes() == ", \"age\": ");
  CHECK(m.forced_bytes(3) == ", \"");
  REQUIRE(m.accept_bytes(", \"age\": 4"));
  CHECK(m.forced_bytes().empty());
  REQUIRE(m.accept_bytes("}"));
  CHECK(m.can_end());
  CHECK(m.forced_bytes().empty());
}

TEST_CASE("forced bytes of a schema's first required property") {
  const auto grammar = std::make_shared<const g::ByteGrammar>(g::compile_json_schema(
      R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name","n"],
          "additionalProperties":false})"));
  g::GrammarMatcher m(grammar);
  CHECK(m.forced_bytes() == "{");  // then optional whitespace
  REQUIRE(m.accept_bytes("{"));
  CHECK(m.forced_bytes().empty());
  REQUIRE(m.accept_bytes("\""));
  CHECK(m.forced_bytes() == "name\"");
}
