// Tool calls parsed from model outputs (net/tool_calls): each family's syntax as its
// chat template teaches it and its models answer (Llama 3.1-3.3 JSON, with and
// without <|python_tag|>; Hermes/Qwen2.5/Qwen3 <tool_call>; Mistral [TOOL_CALLS], both
// forms; the generic JSON fallback), the family read from real templates, and the
// streaming hold-back that releases text as soon as it cannot start a call.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "net/tool_calls.hpp"

using namespace specd::net;

namespace {

std::string template_text(const std::string& name) {
  const auto path = std::filesystem::path(SPECD_SOURCE_DIR) / ".." / "shared" / "data" / "templates" / name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "missing template " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The content a stream releases piece by piece with the calls it starts before the end
// (and after which piece), each call's arguments as its pieces add up, and what its end adds.
struct Streamed {
  std::string content;
  std::vector<std::pair<size_t, std::string>> early_calls;  // piece index, name
  std::vector<std::string> arguments;                       // per call, before the end
  StreamStep end;
};

Streamed stream_pieces(ToolCallFormat format, const std::vector<std::string>& pieces) {
  ToolCallStream stream(format);
  Streamed out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    StreamStep step = stream.feed(pieces[i]);
    out.content += step.content;
    for (const ToolCallDelta& d : step.calls) {
      if (!d.name.empty()) {
        REQUIRE(d.index == out.arguments.size());
        out.early_calls.emplace_back(i, d.name);
        out.arguments.emplace_back();
      }
      out.arguments.at(d.index) += d.arguments;
    }
  }
  out.end = stream.finish();
  return out;
}

}  // namespace

TEST_CASE("Llama 3.1-3.3: a JSON call as the whole answer, with parameters; <|python_tag|> and several calls") {
  ParsedOutput p = parse_tool_calls(ToolCallFormat::llama3_json,
                                    R"({"name": "get_weather", "parameters": {"city": "Verona", "unit": "celsius"}})");
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"city":"Verona","unit":"celsius"})");
  CHECK(p.content.empty());
  CHECK(p.calls[0].id.empty());

  p = parse_tool_calls(
      ToolCallFormat::llama3_json,
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "a");
  CHECK(p.calls[0].arguments == "{}");
  CHECK(p.calls[1].arguments == R"({"x":1})");

  // Prose, or JSON that is not a call, stays content.
  p = parse_tool_calls(ToolCallFormat::llama3_json, "The weather in Verona is fair.");
  CHECK(p.calls.empty());
  CHECK(p.content == "The weather in Verona is fair.");
  p = parse_tool_calls(ToolCallFormat::llama3_json, R"({"city": "Verona"})");
  CHECK(p.calls.empty());
  CHECK(p.content == R"({"city": "Verona"})");
}

TEST_CASE("Hermes / Qwen2.5 / Qwen3: <tool_call> blocks, parallel, with text before; a broken one is content") {
  const std::string qwen =
      "I will look both up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Verona\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Rome\"}}\n</tool_call>";
  ParsedOutput p = parse_tool_calls(ToolCallFormat::hermes, qwen);
  REQUIRE(p.calls.size() == 2);
  CHECK(p.content == "I will look both up.");
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"city":"Verona"})");
  CHECK(p.calls[1].name == "get_time");
  CHECK(p.calls[1].arguments == R"({"tz":"Europe/Rome"})");

  // Qwen3 thinks first; the answer ended before the closing tag.
  p = parse_tool_calls(
      ToolCallFormat::hermes,
      "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {}}");
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "w");
  CHECK(p.content == "<think>\nThe user wants weather.\n</think>");

  const std::string broken =
      "<tool_call>\n{\"name\": \"w\", \"arguments\": {\"city\": }\n</tool_call>";  // no call parses
  p = parse_tool_calls(ToolCallFormat::hermes, broken);
  CHECK(p.calls.empty());
  CHECK(p.content == broken);
}

TEST_CASE("Mistral: [TOOL_CALLS] with a JSON array, and the newer name[ARGS]{...} form") {
  ParsedOutput p = parse_tool_calls(
      ToolCallFormat::mistral,
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Verona"}}, {"name": "get_time", "arguments": {}}])");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].arguments == R"({"city":"Verona"})");
  CHECK(p.calls[1].name == "get_time");
  CHECK(p.content.empty());

  p = parse_tool_calls(ToolCallFormat::mistral,
                       R"([TOOL_CALLS]get_weather[ARGS]{"city": "Verona"}[TOOL_CALLS]get_time[ARGS]{"tz": "CET"})");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"city":"Verona"})");
  CHECK(p.calls[1].name == "get_time");
  CHECK(p.calls[1].arguments == R"({"tz":"CET"})");
}

TEST_CASE("the generic JSON fallback: a whole answer that is a call, or an array of calls; arguments as a string") {
  ParsedOutput p = parse_tool_calls(ToolCallFormat::json, R"(  {"name": "f", "arguments": "{\"a\": 1}"}  )");
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].arguments == R"({"a": 1})");
  p = parse_tool_calls(ToolCallFormat::json, R"([{"name": "f", "arguments": {}}, {"name": "g"}])");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[1].arguments == "{}");
  p = parse_tool_calls(ToolCallFormat::json, R"({"name": "f", "arguments": {}} and more)");
  CHECK(p.calls.empty());
  p = parse_tool_calls(ToolCallFormat::json, R"([1, 2])");
  CHECK(p.calls.empty());
  p = parse_tool_calls(ToolCallFormat::json, "  [ ] ");  // no calls: the text stays (found by protocol_fuzz)
  CHECK(p.calls.empty());
  CHECK(p.content == "  [ ] ");
}

TEST_CASE("the format is read from the template: real Llama 3.1, Qwen2.5, Mistral templates; names round-trip") {
  for (const char* llama : {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
                            "meta-llama-Llama-3.3-70B-Instruct.jinja"}) {
    CAPTURE(llama);
    CHECK(detect_tool_call_format(template_text(llama)) == ToolCallFormat::llama3_json);
  }
  for (const char* hermes : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                             "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja"}) {
    CAPTURE(hermes);
    CHECK(detect_tool_call_format(template_text(hermes)) == ToolCallFormat::hermes);
  }
  CHECK(detect_tool_call_format(template_text("mistralai-Mistral-Nemo-Instruct-2407.jinja")) ==
        ToolCallFormat::mistral);
  CHECK(detect_tool_call_format(template_text("google-gemma-2-2b-it.jinja")) == ToolCallFormat::json);
  CHECK(detect_tool_call_format("{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}") ==
        ToolCallFormat::json);
  for (const char* name : {"llama3_json", "hermes", "mistral", "json"}) {
    REQUIRE(parse_tool_call_format(name));
    CHECK(std::string(tool_call_format_name(*parse_tool_call_format(name))) == name);
  }
  CHECK_FALSE(parse_tool_call_format("qwen"));
}

TEST_CASE("streaming: text is released until a marker may begin; a <tool_call> goes out when it closes") {
  Streamed s =
      stream_pieces(ToolCallFormat::hermes,
                    {"Let me ", "check.\n<tool", "_call>\n{\"name\": \"w\", ", "\"arguments\": {}}\n</tool_call>",
                     "\n<tool_call>{\"name\": \"t\", \"arguments\": {\"tz\": 1}}", "</tool_call>\n"});
  CHECK(s.content == "Let me check.\n");
  // Each head goes out once its name and the start of its arguments are there, the
  // arguments as they come.
  CHECK(s.early_calls == std::vector<std::pair<size_t, std::string>>{{3, "w"}, {4, "t"}});
  CHECK(s.arguments == std::vector<std::string>{"{}", R"({"tz": 1})"});
  CHECK(s.end.calls.empty());
  CHECK(s.end.content.empty());

  // A block that does not parse ends the calls: it and what follows are content, as in
  // the whole answer's parse.
  s = stream_pieces(ToolCallFormat::hermes,
                    {"<tool_call>{\"name\": \"w\"}</tool_call>", "<tool_call>{oops}</tool_call>"});
  CHECK(s.early_calls.size() == 1);
  CHECK(s.end.calls.empty());
  CHECK(s.end.content == "<tool_call>{oops}</tool_call>");
  const ParsedOutput whole =
      parse_tool_calls(ToolCallFormat::hermes, "<tool_call>{\"name\": \"w\"}</tool_call><tool_call>{oops}</tool_call>");
  CHECK(whole.calls.size() == 1);
  CHECK(whole.content == "<tool_call>{oops}</tool_call>");

  // A '<' that turns out not to start the marker is released once it cannot.
  ToolCallStream stream(ToolCallFormat::hermes);
  CHECK(stream.feed("a <").content == "a ");
  CHECK(stream.feed("b").content == "<b");
  CHECK(stream.finish().content.empty());

  // Llama 3: an answer that opens with "{" is held as a call, streamed once its
  // parameters start; prose goes out at once.
  s = stream_pieces(ToolCallFormat::llama3_json, {" ", "{\"name\": \"f\",", " \"parameters\": {\"x\"", ": 2}", "}"});
  CHECK(s.content.empty());
  CHECK(s.early_calls == std::vector<std::pair<size_t, std::string>>{{2, "f"}});
  CHECK(s.arguments == std::vector<std::string>{R"({"x": 2})"});
  CHECK(s.end.calls.empty());
  CHECK(s.end.content.empty());
  s = stream_pieces(ToolCallFormat::llama3_json, {"Fair ", "Verona"});
  CHECK(s.content == "Fair Verona");
  CHECK(s.end.calls.empty());
  CHECK(s.end.content.empty());

  // Held text that does not parse comes out at the end as content.
  s = stream_pieces(ToolCallFormat::json, {"{not", " a call"});
  CHECK(s.content.empty());
  CHECK(s.end.calls.empty());
  CHECK(s.end.content == "{not a call");
}

TEST_CASE("tool call ids look like OpenAI's and differ") {
  const std::string a = new_tool_call_id(), b = new_tool_call_id();
  CHECK(a.size() == 29);
  CHECK(a.rfind("call_", 0) == 0);
  CHECK(a != b);
}
