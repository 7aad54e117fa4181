// JSON Schema to grammar: each supported keyword accepts the documents it allows and
// rejects the others; whitespace is bounded; keywords outside the subset are refused
// with their name and JSON pointer.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace g = specd::grammar;

namespace {

std::shared_ptr<const g::ByteGrammar> schema(const std::string& text) {
  return std::make_shared<const g::ByteGrammar>(g::compile_json_schema(text));
}

bool matches(const std::shared_ptr<const g::ByteGrammar>& grammar, const std::string& text) {
  g::GrammarMatcher m(grammar);
  return m.accept_bytes(text) && m.can_end();
}

std::string refusal(const std::string& text) {
  try {
    g::compile_json_schema(text);
  } catch (const specd::SpecdError& e) {
    CHECK(e.code() == specd::ErrorCode::bad_value);
    return e.message();
  }
  return "(compiled)";
}

}  // namespace

TEST_CASE("an object with required and optional properties in schema order") {
  const auto grammar = schema(R"({"type":"object","properties":{
      "name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
      "required":["name"],"additionalProperties":false})");
  CHECK(matches(grammar, R"({"name":"Ann"})"));
  CHECK(matches(grammar, R"({"name":"Ann","age":31,"tags":["a","b"]})"));
  CHECK(matches(grammar, R"({"name":"Ann","tags":[]})"));
  CHECK(matches(grammar, "{\n  \"name\": \"Ann\",\n  \"age\": -4\n}"));
  CHECK(matches(grammar, R"({ "name" : "Ann" , "age" : 0 } )"));
  CHECK_FALSE(matches(grammar, R"({})"));                        // name is required
  CHECK_FALSE(matches(grammar, R"({"age":31,"name":"Ann"})"));   // schema order only
  CHECK_FALSE(matches(grammar, R"({"name":"Ann","age":3.5})"));  // not an integer
  CHECK_FALSE(matches(grammar, R"({"name":"Ann","age":031})"));  // no leading zeros
  CHECK_FALSE(matches(grammar, R"({"name":"Ann","x":1})"));      // additionalProperties false
  CHECK_FALSE(matches(grammar, R"({"name":"Ann",})"));
  CHECK_FALSE(matches(grammar, R"({"name":"Ann","tags":[1]})"));
  CHECK_FALSE(matches(grammar, "{\"name\":\"Ann\"}\n" + std::string(21, ' ')));  // whitespace bound
  CHECK(matches(grammar, "{\"name\":\"Ann\"}\n" + std::string(20, ' ')));
  CHECK_FALSE(matches(grammar, "{  \"name\":\"Ann\"}"));  // one gap holds one space, or a newline and indent
}

TEST_CASE("extra properties are any key but the declared ones when additionalProperties is not false") {
  const auto open = schema(R"({"type":"object","properties":{"foo":{"type":"integer"}}})");
  CHECK(matches(open, R"({"foo":1,"bar":"x","fo":[],"fooo":null})"));
  CHECK(matches(open, R"({"bar":{"nested":[1,{"a":true}]}})"));
  CHECK_FALSE(matches(open, R"({"foo":"not an integer"})"));  // not accepted as an extra key either
  CHECK_FALSE(matches(open, R"({"bar":1,"foo":1})"));
  const auto typed = schema(R"({"type":"object","additionalProperties":{"type":"boolean"}})");
  CHECK(matches(typed, R"({"a":true,"b":false})"));
  CHECK_FALSE(matches(typed, R"({"a":1})"));
  const auto required_extra = schema(R"({"type":"object","required":["id"]})");
  CHECK(matches(required_extra, R"({"id":7,"x":1})"));
  CHECK_FALSE(matches(required_extra, R"({"x":1})"));
}

TEST_CASE("arrays with item schemas and bounds") {
  const auto grammar = schema(R"({"type":"array","items":{"type":"number"},"minItems":2,"maxItems":3})");
  CHECK(matches(grammar, "[1,2.5]"));
  CHECK(matches(grammar, "[1, -2e10, 3E-2]"));
  CHECK_FALSE(matches(grammar, "[1]"));
  CHECK_FALSE(matches(grammar, "[1,2,3,4]"));
  CHECK_FALSE(matches(grammar, "[1,\"2\"]"));
  const auto empty = schema(R"({"type":"array","maxItems":0})");
  CHECK(matches(empty, "[]"));
  CHECK_FALSE(matches(empty, "[1]"));
}

TEST_CASE("enum, const, strings with bounds and patterns") {
  const auto colors = schema(R"({"enum":["red","gr\"een",3,null,{"a":[1]}]})");
  CHECK(matches(colors, R"("red")"));
  CHECK(matches(colors, R"("gr\"een")"));
  CHECK(matches(colors, "3"));
  CHECK(matches(colors, "3.0"));
  CHECK(matches(colors, "null"));
  CHECK(matches(colors, R"({"a":[1]})"));
  CHECK_FALSE(matches(colors, R"("blue")"));
  CHECK_FALSE(matches(colors, "4"));
  const auto typed_enum = schema(R"({"type":"string","enum":["a",1]})");
  CHECK(matches(typed_enum, R"("a")"));
  CHECK_FALSE(matches(typed_enum, "1"));
  const auto pydantic_literal = schema(R"({"const":"x","enum":["x"],"type":"string"})");
  CHECK(matches(pydantic_literal, R"("x")"));
  CHECK_FALSE(matches(pydantic_literal, R"("y")"));
  CHECK(refusal(R"({"const":"x","enum":["y"]})") == "the grammar accepts no input at all");
  const auto constant = schema(R"({"const":"x"})");
  CHECK(matches(constant, R"("x")"));
  CHECK_FALSE(matches(constant, R"("y")"));
  const auto bounded = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  CHECK(matches(bounded, R"("ab")"));
  CHECK(matches(bounded, "\"\xc3\xa9\xc3\xa9\xc3\xa9\""));  // length counts code points
  CHECK(matches(bounded, R"("a\n")"));                      // an escape is one character
  CHECK_FALSE(matches(bounded, R"("a")"));
  CHECK_FALSE(matches(bounded, R"("abcd")"));
  const auto date = schema(R"({"type":"string","pattern":"^\\d{4}-\\d{2}-\\d{2}$"})");
  CHECK(matches(date, R"("2026-11-28")"));
  CHECK_FALSE(matches(date, R"("2026-11-2")"));
  CHECK_FALSE(matches(date, R"("x2026-11-28")"));
  const auto contains = schema(R"({"type":"string","pattern":"ab+c|^z"})");
  CHECK(matches(contains, R"("xxabbbcyy")"));
  CHECK(matches(contains, R"("zoo")"));
  CHECK_FALSE(matches(contains, R"("ac")"));
  CHECK_FALSE(matches(contains, R"("oz")"));
}

TEST_CASE("anyOf, oneOf, type lists, nullable and boolean schemas") {
  const auto nullable = schema(R"({"type":["string","null"]})");
  CHECK(matches(nullable, R"("s")"));
  CHECK(matches(nullable, "null"));
  CHECK_FALSE(matches(nullable, "1"));
  const auto any_of = schema(R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"k":{"const":1}},
      "required":["k"],"additionalProperties":false}]})");
  CHECK(matches(any_of, "12"));
  CHECK(matches(any_of, R"({"k":1})"));
  CHECK_FALSE(matches(any_of, R"({"k":2})"));
  const auto openapi = schema(R"({"type":"integer","nullable":true})");
  CHECK(matches(openapi, "null"));
  CHECK(matches(openapi, "5"));
  const auto anything = schema("true");
  CHECK(matches(anything, R"([1,{"a":"b"},null])"));
  CHECK(refusal("false") == "the grammar accepts no input at all");
  const auto untyped = schema(R"({"properties":{"a":{"type":"integer"}}})");
  CHECK(matches(untyped, "\"not an object\""));  // properties constrain objects only
  CHECK(matches(untyped, R"({"a":1})"));
  CHECK_FALSE(matches(untyped, R"({"a":"x"})"));
}

TEST_CASE("oneOf compiles where its branches are disjoint and is refused where they may overlap") {
  // Pydantic's discriminated union: a required "kind" with a different const per branch.
  const auto pets = schema(R"({"$defs":{
      "Cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},
             "required":["kind","lives"],"additionalProperties":false},
      "Dog":{"type":"object","properties":{"kind":{"const":"dog"},"good":{"type":"boolean"}},
             "required":["kind","good"],"additionalProperties":false}},
      "oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}]})");
  CHECK(matches(pets, R"({"kind":"cat","lives":9})"));
  CHECK(matches(pets, R"({"kind":"dog","good":true})"));
  CHECK_FALSE(matches(pets, R"({"kind":"dog","lives":9})"));
  const auto typed = schema(R"({"oneOf":[{"type":"string"},{"type":"integer"},{"enum":[true,null]}]})");
  CHECK(matches(typed, R"("x")"));
  CHECK(matches(typed, "3"));
  CHECK(matches(typed, "null"));
  // Two strings, an integer against a number, enums sharing 1 = 1.0: a value could match
  // both, which oneOf forbids and a grammar cannot tell apart.
  const std::string overlap = refusal(R"({"properties":{"v":{"oneOf":[{"type":"string"},{"maxLength":3}]}}})");
  CHECK(overlap.find("'oneOf' at #/properties/v: branches 0 and 1 may both match one value") != std::string::npos);
  CHECK(refusal(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})").find("'oneOf'") != std::string::npos);
  CHECK(refusal(R"({"oneOf":[{"enum":[1,2]},{"enum":[3,1.0]}]})").find("branches 0 and 1") != std::string::npos);
  CHECK(refusal(R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}}},{"type":"object",
      "properties":{"k":{"const":2}}}]})")
            .find("'oneOf'") != std::string::npos);  // k is not required: {} matches both
}

TEST_CASE("$ref into $defs and definitions, recursive references") {
  const auto pydantic = schema(R"({"$defs":{"Pet":{"type":"object","properties":{"name":{"type":"string"}},
      "required":["name"],"additionalProperties":false}},"type":"object","properties":{
      "pets":{"type":"array","items":{"$ref":"#/$defs/Pet"}},"best":{"anyOf":[{"$ref":"#/$defs/Pet"},{"type":"null"}]}},
      "required":["pets","best"],"additionalProperties":false})");
  CHECK(matches(pydantic, R"({"pets":[{"name":"a"},{"name":"b"}],"best":null})"));
  CHECK(matches(pydantic, R"({"pets":[],"best":{"name":"c"}})"));
  CHECK_FALSE(matches(pydantic, R"({"pets":[{"nom":"a"}],"best":null})"));
  const auto tree = schema(R"({"definitions":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/definitions/node"}}},"required":["v"],"additionalProperties":false}},
      "$ref":"#/definitions/node"})");
  CHECK(matches(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  CHECK_FALSE(matches(tree, R"({"v":1,"kids":[{"v":"2"}]})"));
  const auto root_ref = schema(R"({"type":"object","properties":{"child":{"$ref":"#"}},"additionalProperties":false})");
  CHECK(matches(root_ref, R"({"child":{"child":{}}})"));
  CHECK_FALSE(matches(root_ref, R"({"child":{"x":1}})"));
}

TEST_CASE("any JSON object for response_format json_object") {
  const auto grammar = std::make_shared<const g::ByteGrammar>(g::any_json_object_grammar());
  CHECK(matches(grammar, R"({"a":[1,2,{"b":null}],"c":"d"})"));
  CHECK(matches(grammar, "{}"));
  CHECK(matches(grammar, "{\n  \"a\": 1\n}\n"));
  CHECK_FALSE(matches(grammar, "[]"));
  CHECK_FALSE(matches(grammar, "\"text\""));
  CHECK_FALSE(matches(grammar, R"({"a":1}{)"));
}

TEST_CASE("keywords outside the subset are refused with their name and location") {
  CHECK(refusal(R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})") ==
        "unsupported JSON Schema keyword 'minimum' at #/properties/age: outside the supported subset");
  CHECK(refusal(R"({"type":"string","format":"date-time"})") ==
        "unsupported JSON Schema keyword 'format' at #: outside the supported subset");
  CHECK(refusal(R"({"type":"array","items":[{"type":"string"}]})") ==
        "unsupported JSON Schema keyword 'items' at #: tuple items (an array) are not supported");
  CHECK(refusal(R"({"type":"array","uniqueItems":true})") ==
        "unsupported JSON Schema keyword 'uniqueItems' at #: uniqueItems: true is outside the supported subset");
  CHECK(refusal(R"({"$ref":"http://example.com/s.json"})") ==
        "unsupported JSON Schema keyword '$ref' at #: only references within the schema (#...) are supported");
  CHECK(refusal(R"({"$ref":"#/$defs/missing"})") ==
        "unsupported JSON Schema keyword '$ref' at #/$defs/missing: no such location");
  CHECK(refusal(R"({"type":"string","pattern":"(?=a)b"})") ==
        "unsupported JSON Schema keyword 'pattern' at #: lookaround or named group in /(?=a)b/");
  CHECK(refusal(R"({"allOf":[{"type":"string"},{"maxLength":3}]})") ==
        "unsupported JSON Schema keyword 'allOf' at #: only allOf with a single schema and no sibling constraints is "
        "supported");
  CHECK(refusal(R"({"properties":{"a/b":{"not":{}}}})") ==
        "unsupported JSON Schema keyword 'not' at #/properties/a~1b: outside the supported subset");
  CHECK(refusal("{\"type\":") == "the JSON schema is not valid JSON");
}

TEST_CASE("deeply nested schemas are refused at a fixed depth") {
  std::string nested = R"({"type":"string"})";
  for (int i = 0; i < 150; ++i) nested = R"({"type":"array","items":)" + nested + "}";
  const std::string message = refusal(nested);
  CHECK(message.rfind("unsupported JSON Schema keyword 'schema' at #/items/items/", 0) == 0);
  CHECK(message.find(": schemas nest deeper than 100") != std::string::npos);
}

TEST_CASE("schemas as Pydantic v2 and zod-to-json-schema write them") {
  const auto pydantic = schema(R"({"$defs":{"Color":{"enum":["red","green"],"title":"Color","type":"string"},
      "Item":{"properties":{"name":{"title":"Name","type":"string"},"qty":{"default":1,"title":"Qty","type":"integer"}},
      "required":["name"],"title":"Item","type":"object"}},
      "properties":{"color":{"$ref":"#/$defs/Color"},"items":{"items":{"$ref":"#/$defs/Item"},"title":"Items","type":"array"},
      "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Note"},
      "kind":{"const":"order","enum":["order"],"title":"Kind","type":"string"}},
      "required":["color","items","kind"],"title":"Order","type":"object"})");
  CHECK(matches(pydantic, R"({"color":"red","items":[{"name":"a","qty":2},{"name":"b"}],"kind":"order"})"));
  CHECK(matches(pydantic, R"({"color":"green","items":[],"note":null,"kind":"order","extra":1})"));
  CHECK_FALSE(matches(pydantic, R"({"color":"blue","items":[],"kind":"order"})"));
  CHECK_FALSE(matches(pydantic, R"({"color":"red","items":[{"qty":2}],"kind":"order"})"));
  CHECK_FALSE(matches(pydantic, R"({"color":"red","items":[],"kind":"other"})"));
  const auto zod = schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"number"},
      "tags":{"type":"array","items":{"type":"string"}},"role":{"type":"string","enum":["admin","user"]},
      "nick":{"type":["string","null"]}},"required":["name","age","tags","role","nick"],"additionalProperties":false,
      "$schema":"http://json-schema.org/draft-07/schema#"})");
  CHECK(matches(zod, R"({"name":"Ann","age":41.5,"tags":["x"],"role":"admin","nick":null})"));
  CHECK_FALSE(matches(zod, R"({"name":"Ann","age":41.5,"tags":["x"],"role":"root","nick":null})"));
  CHECK_FALSE(matches(zod, R"({"name":"Ann","age":41.5,"tags":["x"],"role":"user"})"));
}
