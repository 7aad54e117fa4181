#pragma once
// tool_choice "required" and a named function: the grammar the answer is decoded under,
// so that it is always a call in the syntax the model's family was taught
// (net/tool_calls.hpp) with arguments its function's `parameters` schema admits. The
// grammar is GBNF text whose argument rules are the schemas themselves
// (`%json-schema {...}`, engine/grammar/gbnf_parser.hpp); the engine compiles it like a
// request's own grammar. Pure functions; any thread.
#include <string>
#include <string_view>

#include "net/tool_calls.hpp"

namespace specd::net {

// What a chat request's tool_choice asked for.
struct ToolChoice {
  enum class Mode { automatic, none, required, function };
  Mode mode = Mode::automatic;
  std::string function;  // Mode::function: the function's name
  bool parallel = true;  // parallel_tool_calls: more than one call may follow
};

// The GBNF text of the calls `choice` allows over `tools_json` (the request's tools, as
// read_tools minified them): for required, one call (or, when parallel, one or more) of
// any tool; for a function, one call of it. Per format:
//   hermes       <tool_call>{"name": N, "arguments": A}</tool_call>, newlines around the
//                object allowed, parallel blocks separated by at most a newline
//   llama3_json  {"name": N, "parameters": A}, parallel ones separated by ";"
//   mistral      [{"name": N, "arguments": A}, ...] without the [TOOL_CALLS] marker (a
//                control token the grammar's bytes cannot spell; parse it as json)
//   json         {"name": N, "arguments": A}, or an array of them when parallel
// A call object is written {"name": N, "arguments": A} with exactly these separators (as
// json.dumps and the templates write calls); gaps inside A are JSON-schema gaps
// (json_fragments.hpp). Throws SpecdError
// bad_value: a function that is not among the tools, or a parameters schema outside the
// compiler's subset (naming the tool, the keyword and its location).
std::string tool_call_grammar(ToolCallFormat format, std::string_view tools_json, const ToolChoice& choice);

// The syntax a forced answer is parsed (and streamed) with: mistral's calls come without
// their marker.
ToolCallFormat forced_call_format(ToolCallFormat format);

}  // namespace specd::net
