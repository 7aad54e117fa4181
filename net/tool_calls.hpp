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

// One step of a streamed call, as OpenAI streams them: a call's first delta carries its
// id and name (the caller sets the id), the next ones pieces of its arguments' JSON text.
struct ToolCallDelta {
  size_t index = 0;  // the call's position in the answer
  std::string id;
  std::string name;       // set in the first delta of a call only
  std::string arguments;  // a piece of the arguments (the first delta's is empty)
};

struct StreamStep {
  std::string content;
  std::vector<ToolCallDelta> calls;
};

// Streams an answer's text while holding back what may be the start of a call: the
// text that can no longer begin a call is released as content; from a call's marker
// (or an answer that opens as JSON, where that is the syntax) on, the text is held and
// read as calls while it grows: once a call object has shown its name and the start of
// its "arguments" (or "parameters"), its head goes out and its arguments follow as they
// are generated (their text as the model wrote it; a whole answer's parse minifies them).
// Calls whose members come in another order go out when their block closes or at the
// end. At the end the whole answer's parse decides: calls it finds that were not streamed
// are sent whole; when it finds none and none were streamed, the held text is content.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  // The content that may be sent now (often empty while a marker might be starting)
  // and the call deltas ready now.
  StreamStep feed(std::string_view piece);
  // At the end of the answer: the held-back content and the remaining deltas.
  StreamStep finish();
  size_t calls_started() const { return sent_.size(); }

 private:
  void stream_calls(StreamStep& out);

  ToolCallFormat format_;
  std::string held_;          // not yet released; from a call's marker on, the whole rest
  bool started_ = false;      // released non-space text: a whole-answer call is no longer possible
  bool in_call_ = false;      // a call's marker (or opening bracket) was seen
  std::vector<size_t> sent_;  // per call started: the bytes of its arguments sent
};

}  // namespace specd::net
