#include "net/tool_calls.hpp"

#include <simdjson.h>

#include <array>
#include <random>

namespace specd::net {

namespace {

constexpr std::string_view kSpaces = " \t\r\n";
constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]", kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpaces) - first + 1);
}

// One past the bracket that closes the JSON object or array opening at s[start], or npos.
size_t json_value_end(std::string_view s, size_t start) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// A call object: {"name": ..., "arguments"|"parameters": {...} or a string of JSON}.
std::optional<ParsedToolCall> call_from(simdjson::dom::element e) {
  simdjson::dom::object o;
  std::string_view name;
  if (e.get_object().get(o) != simdjson::SUCCESS || o["name"].get_string().get(name) != simdjson::SUCCESS ||
      name.empty())
    return std::nullopt;
  ParsedToolCall call{{}, std::string(name), "{}"};
  simdjson::dom::element args;
  if (o["arguments"].get(args) != simdjson::SUCCESS && o["parameters"].get(args) != simdjson::SUCCESS) return call;
  std::string_view text;
  if (args.is_object())
    call.arguments = simdjson::minify(args);
  else if (args.get_string().get(text) == simdjson::SUCCESS)
    call.arguments = std::string(text);
  else
    return std::nullopt;
  return call;
}

// The calls of one JSON text: a call object, or a non-empty array of them (all must parse).
bool append_calls(std::string_view json, std::vector<ParsedToolCall>& calls) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) return false;
  if (root.is_array()) {
    bool any = false;
    for (simdjson::dom::element item : root.get_array().value_unsafe()) {
      auto call = call_from(item);
      if (!call) return false;
      calls.push_back(std::move(*call));
      any = true;
    }
    return any;
  }
  auto call = call_from(root);
  if (call) calls.push_back(std::move(*call));
  return call.has_value();
}

// JSON values one after another, separated by spaces, ";" or ",": the whole of `text`.
bool append_sequence(std::string_view text, std::vector<ParsedToolCall>& calls) {
  size_t pos = 0;
  bool any = false;
  while (true) {
    pos = text.find_first_not_of(" \t\r\n;,", pos);
    if (pos == std::string_view::npos) return any;
    if (text[pos] != '{' && text[pos] != '[') return false;
    const size_t end = json_value_end(text, pos);
    if (end == std::string_view::npos || !append_calls(text.substr(pos, end - pos), calls)) return false;
    any = true;
    pos = end;
  }
}

ParsedOutput none(std::string_view text) { return {std::string(text), {}}; }

// Consecutive <tool_call> blocks from the first one; the text before them, and from the
// first thing that is not a block that parses, is content.
ParsedOutput parse_hermes(std::string_view text) {
  const size_t first = text.find(kHermesOpen);
  if (first == std::string_view::npos) return none(text);
  ParsedOutput out{std::string(trim(text.substr(0, first))), {}};
  size_t pos = first;
  while (pos != std::string_view::npos && text.compare(pos, kHermesOpen.size(), kHermesOpen) == 0) {
    const size_t body = pos + kHermesOpen.size();
    const size_t close = text.find(kHermesClose, body);
    const std::string_view inside = trim(text.substr(body, close == std::string_view::npos ? close : close - body));
    if (!append_sequence(inside, out.calls)) break;
    // The answer may end inside its last call.
    pos = close == std::string_view::npos ? close : text.find_first_not_of(kSpaces, close + kHermesClose.size());
  }
  if (out.calls.empty()) return none(text);
  if (pos != std::string_view::npos) {
    out.content += (out.content.empty() ? "" : "\n") + std::string(trim(text.substr(pos)));
  }
  return out;
}

ParsedOutput parse_mistral(std::string_view text) {
  const size_t first = text.find(kMistral);
  if (first == std::string_view::npos) return none(text);
  ParsedOutput out{std::string(trim(text.substr(0, first))), {}};
  std::string_view rest = text.substr(first + kMistral.size());
  const size_t args = rest.find(kMistralArgs);
  if (args == std::string_view::npos) {
    if (!append_sequence(rest, out.calls)) return none(text);
    return out;
  }
  // The newer form: name[ARGS]{...}, each call after its own [TOOL_CALLS].
  while (!rest.empty()) {
    const size_t mark = rest.find(kMistralArgs);
    if (mark == std::string_view::npos) return none(text);
    const std::string_view name = trim(rest.substr(0, mark));
    const size_t open = rest.find_first_not_of(kSpaces, mark + kMistralArgs.size());
    const size_t end = open == std::string_view::npos ? open : json_value_end(rest, open);
    if (name.empty() || end == std::string_view::npos) return none(text);
    simdjson::dom::parser parser;
    simdjson::dom::element e;
    const std::string_view json = rest.substr(open, end - open);
    if (parser.parse(json.data(), json.size()).get(e) != simdjson::SUCCESS || !e.is_object()) return none(text);
    out.calls.push_back({{}, std::string(name), simdjson::minify(e)});
    rest = trim(rest.substr(end));
    if (rest.starts_with(kMistral))
      rest = rest.substr(kMistral.size());
    else if (!rest.empty())
      return none(text);
  }
  return out;
}

ParsedOutput parse_llama3(std::string_view text) {
  const size_t tag = text.find(kPythonTag);
  ParsedOutput out;
  std::string_view calls = trim(text);
  if (tag != std::string_view::npos) {
    out.content = std::string(trim(text.substr(0, tag)));
    calls = trim(text.substr(tag + kPythonTag.size()));
  }
  if (!calls.starts_with('{') || !append_sequence(calls, out.calls)) return none(text);
  return out;
}

ParsedOutput parse_json(std::string_view text) {
  const std::string_view whole = trim(text);
  ParsedOutput out;
  if (whole.empty() || (whole.front() != '{' && whole.front() != '[')) return none(text);
  if (json_value_end(whole, 0) != whole.size() || !append_calls(whole, out.calls)) return none(text);
  return out;
}

// A call seen while the answer grows: its name, and its arguments' text so far.
struct PartialCall {
  std::string name;
  std::string arguments;
};

// How far a call object at text[pos] has come: when it opens with {"name": N,
// "arguments"|"parameters": and an object or array, its name and arguments so far
// (`end` one past its closing brace once it has one). Anything else: no head yet.
struct PartialObject {
  bool head = false;
  PartialCall call;
  size_t end = std::string_view::npos;
};

PartialObject partial_object(std::string_view text, size_t pos) {
  PartialObject out;
  size_t p = pos + 1;  // past '{'
  auto skip = [&] { p = std::min(text.find_first_not_of(kSpaces, p), text.size()); };
  auto expect = [&](std::string_view what) {
    skip();
    if (text.compare(p, what.size(), what) != 0) return false;
    p += what.size();
    return true;
  };
  if (!expect("\"name\"") || !expect(":") || !expect("\"")) return out;
  const size_t name_start = p;
  while (p < text.size() && text[p] != '"') p += text[p] == '\\' ? 2 : 1;
  if (p >= text.size()) return out;
  const std::string_view name = text.substr(name_start, p - name_start);
  if (name.empty() || name.find('\\') != std::string_view::npos) return out;
  ++p;
  if (!expect(",")) return out;
  skip();
  if (!expect("\"arguments\"")) {
    if (!expect("\"parameters\"")) return out;
  }
  if (!expect(":")) return out;
  skip();
  if (p >= text.size() || (text[p] != '{' && text[p] != '[')) return out;
  out.head = true;
  out.call.name = std::string(name);
  const size_t args_end = json_value_end(text, p);
  out.call.arguments = std::string(text.substr(p, args_end == std::string_view::npos ? args_end : args_end - p));
  if (args_end == std::string_view::npos) return out;
  p = args_end;
  if (expect("}")) out.end = p;
  return out;
}

// The calls of a held call region (from its marker on) as far as they have come.
// Hermes blocks that close are parsed whole (their first call keeps the text streamed
// from it); a block that does not parse ends the calls. The other syntaxes: call
// objects one after another, in or out of an array.
std::vector<PartialCall> scan_calls(ToolCallFormat format, std::string_view text) {
  std::vector<PartialCall> calls;
  if (format == ToolCallFormat::hermes) {
    size_t pos = 0;
    while (true) {
      pos = text.find_first_not_of(kSpaces, pos);
      if (pos == std::string_view::npos || text.compare(pos, kHermesOpen.size(), kHermesOpen) != 0) break;
      const size_t body = text.find_first_not_of(kSpaces, pos + kHermesOpen.size());
      if (body == std::string_view::npos) break;
      const size_t close = text.find(kHermesClose, body);
      const PartialObject first = text[body] == '{' ? partial_object(text, body) : PartialObject{};
      if (close == std::string_view::npos) {
        if (first.head) calls.push_back(first.call);
        break;
      }
      std::vector<ParsedToolCall> parsed;
      if (!append_sequence(trim(text.substr(body, close - body)), parsed)) break;
      for (size_t i = 0; i < parsed.size(); ++i) {
        calls.push_back(i == 0 && first.head ? first.call : PartialCall{parsed[i].name, parsed[i].arguments});
      }
      pos = close + kHermesClose.size();
    }
    return calls;
  }
  size_t pos = 0;
  if (text.starts_with(kPythonTag)) pos = kPythonTag.size();
  if (text.starts_with(kMistral)) pos = kMistral.size();
  while (true) {
    pos = text.find_first_not_of(" \t\r\n;,[", pos);
    if (pos == std::string_view::npos || text[pos] != '{') break;
    const PartialObject object = partial_object(text, pos);
    if (!object.head) break;
    calls.push_back(object.call);
    if (object.end == std::string_view::npos) break;
    pos = object.end;
  }
  return calls;
}

std::vector<std::string_view> markers(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::hermes:
      return {kHermesOpen};
    case ToolCallFormat::mistral:
      return {kMistral};
    case ToolCallFormat::llama3_json:
      return {kPythonTag};
    case ToolCallFormat::json:
      return {};
  }
  return {};
}

// The characters that open a call when the answer starts with them.
std::string_view opening_chars(ToolCallFormat format) {
  if (format == ToolCallFormat::llama3_json) return "{";
  if (format == ToolCallFormat::json) return "{[";
  return "";
}

}  // namespace

std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name) {
  for (ToolCallFormat f :
       {ToolCallFormat::llama3_json, ToolCallFormat::hermes, ToolCallFormat::mistral, ToolCallFormat::json}) {
    if (name == tool_call_format_name(f)) return f;
  }
  return std::nullopt;
}

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::llama3_json:
      return "llama3_json";
    case ToolCallFormat::hermes:
      return "hermes";
    case ToolCallFormat::mistral:
      return "mistral";
    case ToolCallFormat::json:
      return "json";
  }
  return "json";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::hermes;
  if (source.find(kMistral) != std::string_view::npos) return ToolCallFormat::mistral;
  // Llama 3.1-3.3 teach JSON calls with "parameters" inside their header-delimited turns.
  if (source.find(kPythonTag) != std::string_view::npos ||
      (source.find("<|start_header_id|>") != std::string_view::npos &&
       source.find("\"parameters\"") != std::string_view::npos))
    return ToolCallFormat::llama3_json;
  return ToolCallFormat::json;
}

ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  switch (format) {
    case ToolCallFormat::hermes:
      return parse_hermes(text);
    case ToolCallFormat::mistral:
      return parse_mistral(text);
    case ToolCallFormat::llama3_json:
      return parse_llama3(text);
    case ToolCallFormat::json:
      return parse_json(text);
  }
  return none(text);
}

std::string new_tool_call_id() {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(generator)];
  return id;
}

StreamStep ToolCallStream::feed(std::string_view piece) {
  held_ += piece;
  StreamStep out;
  if (in_call_) {
    stream_calls(out);
    return out;
  }
  if (!started_) {
    const size_t first = held_.find_first_not_of(kSpaces);
    if (first == std::string::npos) return out;  // spaces may precede a call
    if (opening_chars(format_).find(held_[first]) != std::string_view::npos) {
      in_call_ = true;
      stream_calls(out);
      return out;
    }
    started_ = true;
  }
  size_t keep = 0;  // a tail that may be the start of a marker
  for (std::string_view marker : markers(format_)) {
    if (const size_t at = held_.find(marker); at != std::string::npos) {
      out.content = held_.substr(0, at);
      held_.erase(0, at);
      in_call_ = true;
      stream_calls(out);
      return out;
    }
    for (size_t n = std::min(marker.size() - 1, held_.size()); n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == marker.substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  out.content = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

// The heads of calls that have shown their names and the arguments' text since the last
// step, as deltas.
void ToolCallStream::stream_calls(StreamStep& out) {
  const std::vector<PartialCall> calls = scan_calls(format_, held_);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i == sent_.size()) {
      out.calls.push_back({i, {}, calls[i].name, {}});
      sent_.push_back(0);
    }
    if (calls[i].arguments.size() > sent_[i]) {
      out.calls.push_back({i, {}, {}, calls[i].arguments.substr(sent_[i])});
      sent_[i] = calls[i].arguments.size();
    }
  }
}

StreamStep ToolCallStream::finish() {
  StreamStep out;
  if (!in_call_) {
    out.content = std::move(held_);
    held_.clear();
    return out;
  }
  stream_calls(out);
  const ParsedOutput whole = parse_tool_calls(format_, held_);
  if (whole.calls.empty()) {
    if (sent_.empty()) out.content = std::move(held_);
    held_.clear();
    return out;
  }
  // Calls the stream could not follow (members in another order, a syntax read whole).
  for (size_t i = sent_.size(); i < whole.calls.size(); ++i) {
    out.calls.push_back({i, {}, whole.calls[i].name, {}});
    out.calls.push_back({i, {}, {}, whole.calls[i].arguments});
    sent_.push_back(whole.calls[i].arguments.size());
  }
  out.content = whole.content;
  held_.clear();
  return out;
}

}  // namespace specd::net
