// The grammars of tool_choice "required" and a named function (net/tool_call_grammar):
// per family a valid call is accepted and parses back into exactly its name and
// arguments, invalid calls (another name, arguments the schema refuses, text around the
// call, a second call where one is allowed) are not, and tools the grammar cannot
// serve are refused naming the tool and the keyword.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "net/tool_call_grammar.hpp"

using namespace specd::net;
namespace g = specd::grammar;

namespace {

constexpr std::string_view kTools =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":)"
    R"({"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],)"
    R"("additionalProperties":false}}},)"
    R"({"type":"function","function":{"name":"get_time","parameters":{"$defs":{"tz":{"type":"string",)"
    R"("maxLength":3}},"type":"object","properties":{"tz":{"$ref":"#/$defs/tz"}},"required":["tz"]}}},)"
    R"({"type":"function","function":{"name":"ping"}}])";

const ToolChoice kRequired{ToolChoice::Mode::required, {}, true};
const ToolChoice kRequiredOne{ToolChoice::Mode::required, {}, false};

std::shared_ptr<const g::ByteGrammar> grammar(ToolCallFormat format, const ToolChoice& choice) {
  return std::make_shared<const g::ByteGrammar>(g::compile_gbnf(tool_call_grammar(format, kTools, choice)));
}

bool matches(const std::shared_ptr<const g::ByteGrammar>& grammar, const std::string& text) {
  g::GrammarMatcher m(grammar);
  return m.accept_bytes(text) && m.can_end();
}

// The calls a forced answer parses into, as "name arguments" lines.
std::string parsed(ToolCallFormat format, const std::string& text) {
  const ParsedOutput out = parse_tool_calls(forced_call_format(format), text);
  std::string lines = out.content.empty() ? "" : "content: " + out.content + "\n";
  for (const ParsedToolCall& c : out.calls) lines += c.name + " " + c.arguments + "\n";
  return lines;
}

std::string refusal(std::string_view tools, const ToolChoice& choice) {
  try {
    (void)tool_call_grammar(ToolCallFormat::hermes, tools, choice);
  } catch (const specd::SpecdError& e) {
    CHECK(e.code() == specd::ErrorCode::bad_value);
    return e.message();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("hermes: <tool_call> blocks with the schema's arguments; parsed back exactly") {
  const auto many = grammar(ToolCallFormat::hermes, kRequired);
  const std::string one = R"(<tool_call>{"name": "get_weather", "arguments": {"city": "Verona", "unit": "celsius"}})"
                          R"(</tool_call>)";
  CHECK(matches(many, one));
  CHECK(parsed(ToolCallFormat::hermes, one) == "get_weather {\"city\":\"Verona\",\"unit\":\"celsius\"}\n");
  const std::string two =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>";
  CHECK(matches(many, two));
  CHECK(parsed(ToolCallFormat::hermes, two) == "get_time {\"tz\":\"CET\"}\nping {}\n");

  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "get_wether", "arguments": {"city": "V"}}</tool_call>)"));
  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>)"));  // city required
  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "get_weather", "arguments": {"city": 3}}</tool_call>)"));
  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "get_weather", "arguments": {"city": "V", "x": 1}}</tool_call>)"));
  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "get_time", "arguments": {"tz": "Europe"}}</tool_call>)"));
  CHECK_FALSE(matches(many, R"(<tool_call>{"name": "ping", "arguments": {"a": 1}}</tool_call>)"));
  CHECK_FALSE(matches(many, R"(<tool_call>{"arguments": {}, "name": "ping"}</tool_call>)"));
  // The call object's separators are json.dumps' (", " and ": "); the arguments' gaps are free.
  CHECK_FALSE(matches(many, R"(<tool_call>{"name":"ping","arguments":{}}</tool_call>)"));
  CHECK(matches(many, "<tool_call>{\"name\": \"get_time\", \"arguments\": {\n  \"tz\":\"CET\"\n}}</tool_call>"));
  CHECK_FALSE(matches(many, "Sure. " + one));
  CHECK_FALSE(matches(many, one + " Done."));
  CHECK_FALSE(matches(many, ""));

  // parallel_tool_calls false: exactly one call.
  const auto single = grammar(ToolCallFormat::hermes, kRequiredOne);
  CHECK(matches(single, one));
  CHECK_FALSE(matches(single, two));
}

TEST_CASE("a named function: only its calls, one of them") {
  const auto named = grammar(ToolCallFormat::hermes, {ToolChoice::Mode::function, "get_time", true});
  CHECK(matches(named, R"(<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>)"));
  CHECK_FALSE(matches(named, R"(<tool_call>{"name": "ping", "arguments": {}}</tool_call>)"));
  CHECK_FALSE(matches(named, R"(<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>)"
                             R"(<tool_call>{"name": "get_time", "arguments": {"tz": "CET"}}</tool_call>)"));
}

TEST_CASE("llama3_json: a JSON object with parameters; parallel calls separated by ;") {
  const auto many = grammar(ToolCallFormat::llama3_json, kRequired);
  const std::string text =
      R"({"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "ping", "parameters": {}})";
  CHECK(matches(many, text));
  CHECK(parsed(ToolCallFormat::llama3_json, text) == "get_weather {\"city\":\"Paris\"}\nping {}\n");
  CHECK_FALSE(matches(many, R"({"name": "get_weather", "arguments": {"city": "Paris"}})"));  // Llama's key
  CHECK_FALSE(matches(many, R"(<|python_tag|>{"name": "ping", "parameters": {}})"));
  const auto single = grammar(ToolCallFormat::llama3_json, kRequiredOne);
  CHECK_FALSE(matches(single, text));
}

TEST_CASE("mistral: an array of calls without the [TOOL_CALLS] control token, parsed as JSON") {
  const auto many = grammar(ToolCallFormat::mistral, kRequired);
  const std::string text = R"([{"name": "get_time", "arguments": {"tz": "PST"}}, {"name": "ping", "arguments": {}}])";
  CHECK(matches(many, text));
  CHECK(forced_call_format(ToolCallFormat::mistral) == ToolCallFormat::json);
  CHECK(parsed(ToolCallFormat::mistral, text) == "get_time {\"tz\":\"PST\"}\nping {}\n");
  CHECK_FALSE(matches(many, "[TOOL_CALLS]" + text));
  CHECK_FALSE(matches(many, "[]"));
  const auto single = grammar(ToolCallFormat::mistral, kRequiredOne);
  CHECK(matches(single, R"([{"name": "ping", "arguments": {}}])"));
  CHECK_FALSE(matches(single, text));
}

TEST_CASE("json: one call object, or an array of them when parallel") {
  const auto many = grammar(ToolCallFormat::json, kRequired);
  CHECK(matches(many, R"({"name": "ping", "arguments": {}})"));
  CHECK(matches(many, R"([{"name": "ping", "arguments": {}},{"name": "get_time", "arguments": {"tz":"X"}}])"));
  CHECK(parsed(ToolCallFormat::json,
               R"([{"name": "ping", "arguments": {}},{"name": "get_time", "arguments": {"tz":"X"}}])") ==
        "ping {}\nget_time {\"tz\":\"X\"}\n");
  CHECK_FALSE(matches(many, R"({"name": "ping"})"));
  const auto single = grammar(ToolCallFormat::json, kRequiredOne);
  CHECK_FALSE(matches(single, R"([{"name": "ping", "arguments": {}}])"));
}

TEST_CASE("names with quotes and backslashes are spelled as JSON strings") {
  const std::string tools = R"([{"type":"function","function":{"name":"say \"hi\" \\ now"}}])";
  const auto grammar = std::make_shared<const g::ByteGrammar>(
      g::compile_gbnf(tool_call_grammar(ToolCallFormat::json, tools, kRequiredOne)));
  const std::string call = R"({"name": "say \"hi\" \\ now", "arguments": {}})";
  CHECK(matches(grammar, call));
  CHECK(parsed(ToolCallFormat::json, call) == "say \"hi\" \\ now {}\n");
}

TEST_CASE("refusals: a function not among the tools, a schema outside the subset (tool and keyword named)") {
  CHECK(refusal(kTools, {ToolChoice::Mode::function, "get_news", true}) ==
        "tool_choice names function \"get_news\", which is not among the tools");
  const std::string bad =
      R"([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"when",)"
      R"("parameters":{"type":"object","properties":{"day":{"type":"string","format":"date"}}}}}])";
  const std::string message = refusal(bad, kRequired);
  CHECK(message.find("tools[1].function.parameters (when): unsupported JSON Schema keyword 'format' at "
                     "#/properties/day") == 0);
  // A named function other than the bad one compiles: only the chosen tool's schema matters.
  CHECK(refusal(bad, {ToolChoice::Mode::function, "a", true}) == "accepted");
  CHECK(refusal("[]", kRequired) == "tool_choice needs tools");
}
