#include "net/tool_call_grammar.hpp"

#include <simdjson.h>

#include <cstdio>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/grammar/json_fragments.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace specd::net {

namespace {

struct Tool {
  std::string name;
  std::string parameters;  // a JSON Schema object's text
  size_t index;            // in the request's tools
};

std::vector<Tool> read_tools(std::string_view tools_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::array list;
  if (parser.parse(tools_json.data(), tools_json.size()).get(root) != simdjson::SUCCESS ||
      root.get_array().get(list) != simdjson::SUCCESS)
    throw SpecdError(ErrorCode::bad_value, "tool_choice needs tools");
  std::vector<Tool> tools;
  for (simdjson::dom::element tool : list) {
    std::string_view name;
    simdjson::dom::element params;
    if (tool["function"]["name"].get_string().get(name) != simdjson::SUCCESS) continue;  // read_tools refused it
    // No parameters: a function without arguments, {} its only call.
    std::string schema = R"({"type":"object","additionalProperties":false})";
    if (tool["function"]["parameters"].get(params) == simdjson::SUCCESS) schema = simdjson::minify(params);
    tools.push_back({std::string(name), std::move(schema), tools.size()});
  }
  return tools;
}

// A GBNF string literal of `bytes` (UTF-8 stays as it is; quotes, backslashes and
// control characters are escaped).
std::string literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The schema is compiled once here to refuse it with the tool's name (the engine compiles
// the whole grammar again, from its cache when the tools repeat).
void check_schema(const Tool& tool) {
  try {
    (void)grammar::compile_json_schema(tool.parameters);
  } catch (const SpecdError& e) {
    throw SpecdError(ErrorCode::bad_value, "tools[" + std::to_string(tool.index) + "].function.parameters (" +
                                               tool.name + "): " + e.message());
  }
}

// One call object per tool, `call ::=` the choice among them. The object's own
// separators are fixed as json.dumps writes them (", " and ": "), the way the templates
// show calls: a model cannot spend its tokens on whitespace there.
std::string call_rules(const std::vector<Tool>& tools, std::string_view arguments_key) {
  std::string rules, choice;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string n = std::to_string(i);
    const std::string head =
        "{\"name\": " + grammar::JsonFragments::quote(tools[i].name) + ", \"" + std::string(arguments_key) + "\": ";
    rules += "call-" + n + " ::= " + literal(head) + " args-" + n + " \"}\"\n";
    rules += "args-" + n + " ::= %json-schema " + tools[i].parameters + "\n";
    choice += (i == 0 ? "" : " | ") + ("call-" + n);
  }
  // A gap between calls in an array, as the schema compiler's (json_fragments.hpp).
  rules += "ws ::= (\" \" | \"\\n\" [ \\t]{0,20})?\n";
  return rules + "call ::= " + choice + "\n";
}

}  // namespace

ToolCallFormat forced_call_format(ToolCallFormat format) {
  return format == ToolCallFormat::mistral ? ToolCallFormat::json : format;
}

std::string tool_call_grammar(ToolCallFormat format, std::string_view tools_json, const ToolChoice& choice) {
  std::vector<Tool> tools = read_tools(tools_json);
  if (choice.mode == ToolChoice::Mode::function) {
    std::erase_if(tools, [&](const Tool& t) { return t.name != choice.function; });
    if (tools.empty())
      throw SpecdError(ErrorCode::bad_value,
                       "tool_choice names function \"" + choice.function + "\", which is not among the tools");
    tools.resize(1);
  }
  if (tools.empty()) throw SpecdError(ErrorCode::bad_value, "tool_choice needs tools");
  for (const Tool& t : tools) check_schema(t);
  const bool many = choice.parallel && choice.mode == ToolChoice::Mode::required;
  switch (format) {
    case ToolCallFormat::hermes:
      return std::string(many ? "root ::= block (\"\\n\"? block)*\n" : "root ::= block\n") +
             "block ::= \"<tool_call>\" \"\\n\"? call \"\\n\"? \"</tool_call>\"\n" + call_rules(tools, "arguments");
    case ToolCallFormat::llama3_json:
      return std::string(many ? "root ::= call (\";\" \" \"? call)*\n" : "root ::= call\n") +
             call_rules(tools, "parameters");
    case ToolCallFormat::mistral:
      return std::string(many ? "root ::= \"[\" ws call (\",\" ws call)* ws \"]\"\n"
                              : "root ::= \"[\" ws call ws \"]\"\n") +
             call_rules(tools, "arguments");
    case ToolCallFormat::json:
      return std::string(many ? "root ::= call | \"[\" ws call (\",\" ws call)* ws \"]\"\n" : "root ::= call\n") +
             call_rules(tools, "arguments");
  }
  return {};
}

}  // namespace specd::net
