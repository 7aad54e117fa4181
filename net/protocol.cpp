#include "net/protocol.hpp"

#include <simdjson.h>
#include <boost/json/object.hpp>

#include <climits>
#include <cmath>

#include "json/json_serialize.hpp"

namespace specd::net {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Thrown inside the parser only; turned into a ProtocolError at the top.
struct Refusal {
  WireCode code;
  std::string message;
};

[[noreturn]] void refuse(WireCode code, std::string message) { throw Refusal{code, std::move(message)}; }

// At most `n` bytes of valid UTF-8 `s`, cut at a character boundary.
std::string utf8_prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// A member that is present and not null.
std::optional<element> member(const object& o, std::string_view name) {
  element e;
  if (o.at_key(name).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

std::string as_string(element e, std::string_view name) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, std::string(name) + " must be a string");
  return std::string(s);
}

bool as_bool(element e, std::string_view name) {
  bool b = false;
  if (e.get_bool().get(b) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, std::string(name) + " must be true or false");
  return b;
}

// An integer in [lo, hi]; 12.0 and 1e3 are not integers here.
int64_t as_integer(element e, std::string_view name, int64_t lo, int64_t hi) {
  const std::string range = " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (e.type() == element_type::UINT64) refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range);
  int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range);
  if (v < lo || v > hi)
    refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range + ", got " + std::to_string(v));
  return v;
}

double as_number(element e, std::string_view name) {
  double v = 0;
  switch (e.type()) {
    case element_type::INT64:
      v = static_cast<double>(int64_t(e));
      break;
    case element_type::UINT64:
      v = static_cast<double>(uint64_t(e));
      break;
    case element_type::DOUBLE:
      v = double(e);
      break;
    default:
      refuse(ErrorCode::bad_value, std::string(name) + " must be a number");
  }
  if (!std::isfinite(v)) refuse(ErrorCode::bad_value, std::string(name) + " must be finite");
  return v;
}

void read_stop(element e, std::vector<std::string>& stop, const ProtocolLimits& limits) {
  if (e.type() == element_type::STRING) {
    stop.push_back(as_string(e, "stop"));
  } else if (e.type() == element_type::ARRAY) {
    for (element s : e.get_array().value_unsafe()) stop.push_back(as_string(s, "each stop entry"));
  } else {
    refuse(ErrorCode::bad_value, "stop must be a string or an array of strings");
  }
  if (stop.size() > limits.max_stop_strings) {
    refuse(ErrorCode::bad_value, "at most " + std::to_string(limits.max_stop_strings) + " stop strings");
  }
}

int32_t as_int32(element e, std::string_view name) {
  return static_cast<int32_t>(as_integer(e, name, INT32_MIN, INT32_MAX));
}

void read_speculative(element e, SpecSettings& spec) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "speculative must be an object");
  if (auto v = member(o, "enabled")) spec.enabled = as_bool(*v, "speculative.enabled");
  if (auto v = member(o, "k")) {
    if (v->type() == element_type::STRING && as_string(*v, "speculative.k") == "auto") {
      spec.adaptive = true;
    } else if (v->type() == element_type::STRING) {
      refuse(ErrorCode::bad_value, "speculative.k must be an integer or \"auto\"");
    } else {
      spec.k = as_int32(*v, "speculative.k");
    }
  }
  if (auto v = member(o, "tree")) {
    std::string error;
    const std::optional<TreeSettings> tree = parse_tree_settings(as_string(*v, "speculative.tree"), error);
    if (!tree) refuse(ErrorCode::bad_value, "speculative." + error);
    spec.tree = *tree;
  }
  if (auto v = member(o, "drafter")) {
    const std::string d = as_string(*v, "speculative.drafter");
    if (d == "model")
      spec.drafter = DrafterKind::model;
    else if (d == "lookup")
      spec.drafter = DrafterKind::lookup;
    else
      refuse(ErrorCode::bad_value, "speculative.drafter must be \"model\" or \"lookup\"");
  }
}

// The sampling and length fields both protocols share. Their values are the engine's
// to judge (validate_request); here only their types, and the gateway's bounds.
void read_sampling(const object& o, GenerateRequest& r, const ProtocolLimits& limits) {
  r.sampling.temperature = limits.default_temperature;
  r.max_tokens = limits.default_max_tokens;
  if (auto v = member(o, "temperature")) r.sampling.temperature = as_number(*v, "temperature");
  if (auto v = member(o, "top_p")) r.sampling.top_p = as_number(*v, "top_p");
  if (auto v = member(o, "top_k")) r.sampling.top_k = as_int32(*v, "top_k");
  if (auto v = member(o, "repetition_penalty")) r.sampling.repetition_penalty = as_number(*v, "repetition_penalty");
  if (auto v = member(o, "seed")) r.sampling.seed = static_cast<uint64_t>(as_integer(*v, "seed", 0, INT64_MAX));
  if (auto v = member(o, "max_tokens"))
    r.max_tokens = static_cast<int32_t>(as_integer(*v, "max_tokens", 1, limits.max_tokens_limit));
  if (auto v = member(o, "stop")) read_stop(*v, r.stop, limits);
  if (auto v = member(o, "speculative")) read_speculative(*v, r.spec);
  if (auto v = member(o, "ignore_eos")) r.ignore_eos = as_bool(*v, "ignore_eos");
  if (auto v = member(o, "cache_prompt")) r.cache_prompt = as_bool(*v, "cache_prompt");
}

std::string message_content(element e, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (e.type() == element_type::STRING) return as_string(e, where);
  if (e.type() != element_type::ARRAY)
    refuse(ErrorCode::bad_value, where + " must be a string or an array of text parts");
  std::string text;
  for (element part : e.get_array().value_unsafe()) {
    object o;
    if (part.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, where + " parts must be objects");
    auto type = member(o, "type");
    auto part_text = member(o, "text");
    if (!type || as_string(*type, where + " part type") != "text" || !part_text) {
      refuse(ErrorCode::bad_value, where + ": only {\"type\":\"text\",\"text\":...} parts are supported");
    }
    text += as_string(*part_text, where + " part text");
  }
  return text;
}

void read_messages(element e, std::vector<ChatMessage>& messages, const ProtocolLimits& limits) {
  simdjson::dom::array list;
  if (e.get_array().get(list) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "messages must be an array");
  for (element m : list) {
    const size_t i = messages.size();
    if (i >= limits.max_messages)
      refuse(ErrorCode::bad_value, "at most " + std::to_string(limits.max_messages) + " messages");
    object o;
    if (m.get_object().get(o) != simdjson::SUCCESS)
      refuse(ErrorCode::bad_value, "messages[" + std::to_string(i) + "] must be an object");
    auto role = member(o, "role");
    if (!role) refuse(ErrorCode::missing_field, "messages[" + std::to_string(i) + "] needs a role");
    ChatMessage message{as_string(*role, "role"), {}};
    if (message.role == "developer") message.role = "system";  // OpenAI's newer name
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      refuse(ErrorCode::bad_value, "messages[" + std::to_string(i) + "].role must be system, user or assistant");
    }
    if (auto content = member(o, "content"))
      message.content = message_content(*content, i);
    else if (message.role != "assistant")
      refuse(ErrorCode::missing_field, "messages[" + std::to_string(i) + "] needs content");
    messages.push_back(std::move(message));
  }
  if (messages.empty()) refuse(ErrorCode::bad_value, "messages is empty");
}

// Either "prompt" (a string) or "messages" (a conversation), not both.
void read_input(const object& o, GenerateRequest& r, const ProtocolLimits& limits) {
  auto prompt = member(o, "prompt");
  auto messages = member(o, "messages");
  if (prompt && messages) refuse(ErrorCode::bad_value, "give prompt or messages, not both");
  if (!prompt && !messages) refuse(ErrorCode::missing_field, "prompt or messages is required");
  if (prompt)
    r.prompt = as_string(*prompt, "prompt");
  else
    read_messages(*messages, r.messages, limits);
}

element parse_root(simdjson::dom::parser& parser, std::string_view text) {
  if (!valid_utf8(text)) refuse(GatewayCode::invalid_utf8, "the input is not valid UTF-8");
  element root;
  if (auto error = parser.parse(text.data(), text.size()).get(root); error != simdjson::SUCCESS) {
    refuse(ErrorCode::malformed_json, std::string("malformed JSON: ") + simdjson::error_message(error));
  }
  return root;
}

object parse_object(simdjson::dom::parser& parser, std::string_view text) {
  element root = parse_root(parser, text);
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "the input must be a JSON object");
  return o;
}

std::string read_id(const object& o, const ProtocolLimits& limits) {
  auto id = member(o, "id");
  if (!id) refuse(ErrorCode::missing_field, "id is required");
  std::string s = as_string(*id, "id");
  if (s.empty() || s.size() > limits.max_id_bytes) {
    refuse(ErrorCode::bad_value, "id must have 1 to " + std::to_string(limits.max_id_bytes) + " bytes");
  }
  return s;
}

ClientMessage parse_message_object(const object& o, const ProtocolLimits& limits) {
  auto type_field = member(o, "type");
  if (!type_field) refuse(ErrorCode::missing_field, "type is required");
  const std::string type = as_string(*type_field, "type");
  if (type == "cancel") return CancelMessage{read_id(o, limits)};
  if (type != "generate") refuse(GatewayCode::unknown_type, "unknown message type \"" + utf8_prefix(type, 64) + "\"");
  GenerateParams p;
  p.request.id = read_id(o, limits);
  read_input(o, p.request, limits);
  read_sampling(o, p.request, limits);
  return p;
}

// The string id of a message, if it has one, for error frames about it.
std::optional<std::string> id_of(const object& o, const ProtocolLimits& limits) {
  auto id = member(o, "id");
  std::string_view s;
  if (!id || id->get_string().get(s) != simdjson::SUCCESS || s.empty() || s.size() > limits.max_id_bytes)
    return std::nullopt;
  return std::string(s);
}

thread_local simdjson::dom::parser tls_parser;

}  // namespace

bool valid_utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

ClientMessage parse_client_message(std::string_view text, const ProtocolLimits& limits) {
  object o;
  try {
    o = parse_object(tls_parser, text);
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
  try {
    return parse_message_object(o, limits);
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), id_of(o, limits)};
  }
}

std::variant<ProtocolError, GenerateParams> parse_openai_body(std::string_view body, OpenAiRoute route,
                                                              const ProtocolLimits& limits) {
  try {
    object o = parse_object(tls_parser, body);
    GenerateParams p;
    if (route == OpenAiRoute::chat_completions) {
      auto messages = member(o, "messages");
      if (!messages) refuse(ErrorCode::missing_field, "messages is required");
      read_messages(*messages, p.request.messages, limits);
    } else {
      auto prompt = member(o, "prompt");
      if (!prompt) refuse(ErrorCode::missing_field, "prompt is required");
      if (prompt->type() == element_type::ARRAY) {
        simdjson::dom::array list = prompt->get_array().value_unsafe();
        if (list.size() != 1) refuse(ErrorCode::bad_value, "prompt must be one string (batches are not supported)");
        p.request.prompt = as_string(list.at(0).value_unsafe(), "prompt");
      } else {
        p.request.prompt = as_string(*prompt, "prompt");
      }
    }
    read_sampling(o, p.request, limits);
    if (auto v = member(o, "max_completion_tokens")) {
      p.request.max_tokens = static_cast<int32_t>(as_integer(*v, "max_completion_tokens", 1, limits.max_tokens_limit));
    }
    if (auto v = member(o, "n"); v && as_integer(*v, "n", 1, 1) != 1) refuse(ErrorCode::bad_value, "n must be 1");
    if (auto v = member(o, "model")) p.model = as_string(*v, "model");
    if (auto v = member(o, "stream")) p.stream = as_bool(*v, "stream");
    if (auto v = member(o, "stream_options")) {
      object so;
      if (v->get_object().get(so) != simdjson::SUCCESS)
        refuse(ErrorCode::bad_value, "stream_options must be an object");
      if (auto u = member(so, "include_usage")) p.include_usage = as_bool(*u, "stream_options.include_usage");
    }
    return p;
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
}

std::variant<ProtocolError, std::vector<ChatMessage>> parse_chat_messages(std::string_view json,
                                                                          const ProtocolLimits& limits) {
  try {
    element root = parse_root(tls_parser, json);
    object o;
    if (root.get_object().get(o) == simdjson::SUCCESS) {
      auto messages = member(o, "messages");
      if (!messages) refuse(ErrorCode::missing_field, "messages is required");
      root = *messages;
    }
    std::vector<ChatMessage> messages;
    read_messages(root, messages, limits);
    return messages;
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
}

std::string error_frame(const ProtocolError& error) {
  return serialize_json(boost::json::object{{"type", "error"},
                                            {"id", error.id ? boost::json::value(*error.id) : nullptr},
                                            {"code", wire_name(error.code)},
                                            {"message", error.message}});
}

}  // namespace specd::net
