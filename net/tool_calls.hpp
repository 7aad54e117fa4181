#pragma once
// Tool calls in a model's output, parsed into OpenAI's tool_calls by the syntax the
// model's family was taught (the chat template shows it, so the format is read from the
// template's text; [server] tool_call_format overrides it):
//   llama3_json  Llama 3.1-3.3: {"name": ..., "parameters": {...}} as the whole answer,
//                or after <|python_tag|>; several separated by ";" or newlines
//   hermes       Hermes, Qwen2.5, Qwen3 (and specd's committed template):
//                <tool_call>{"name": ..., "arguments": {...}}</tool_call>, repeated
//   mistral      [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...], or the newer
//                [TOOL_CALLS]name[ARGS]{...}
//   json         a generic fallback: the whole answer a call object or an array of them
// Text that does not parse as calls stays content. Pure functions and a value type;
// any thread.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::net {

enum class ToolCallFormat { llama3_json, hermes, mistral, json };

// "llama3_json", "hermes", "mistral", "json"; nullopt for another name.
std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name);
const char* tool_call_format_name(ToolCallFormat format);
// The syntax a chat template teaches: its markers, else json.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

struct ParsedToolCall {
  std::string id;  // set by the caller (new_tool_call_id); the parser leaves it empty
  std::string name;
  std::string arguments;  // JSON text of the arguments object, minified
};

struct ParsedOutput {
  std::string content;  // the text outside the calls, trimmed when there are calls
  std::vector<ParsedToolCall> calls;
};

// The calls in a whole answer; none (and the text as content) when it holds none that parse.
ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

// "call_" and 24 random letters and digits, as OpenAI's ids look.
std::string new_tool_call_id();

// Streams an answer's text while holding back what may be the start of a call: the
// text that can no longer begin a call is released as content; from a call's marker
// on, the text is held. A <tool_call> block goes out as soon as it closes; the other
// syntaxes' calls at the end, where what does not parse is released as content.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  // The content that may be sent now (often empty while a marker might be starting)
  // and the calls complete now.
  ParsedOutput feed(std::string_view piece);
  // At the end of the answer: the held-back content and the remaining calls.
  ParsedOutput finish();

 private:
  void take_closed_calls(std::vector<ParsedToolCall>& calls);

  ToolCallFormat format_;
  std::string held_;         // not yet released
  bool started_ = false;     // released non-space text: a whole-answer call is no longer possible
  bool in_call_ = false;     // a call's marker (or opening bracket) was seen
  bool sent_calls_ = false;  // feed returned calls
  bool past_calls_ = false;  // text that is not a call followed them: the rest is content
};

}  // namespace specd::net
