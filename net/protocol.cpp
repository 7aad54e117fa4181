#include "net/protocol.hpp"

#include <simdjson.h>
#include <boost/json/object.hpp>

#include <charconv>
#include <climits>
#include <cmath>
#include <random>

#include "engine/request/token_logprobs.hpp"
#include "json/json_serialize.hpp"
#include "net/chat_messages_json.hpp"
#include "net/json_fields.hpp"

namespace specd::net {

namespace {

using namespace json_fields;

uint64_t fresh_seed() {
  thread_local std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
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
      spec.adaptive = false;
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

// OpenAI's {"token id": bias}: ids as decimal strings (JSON keys), biases numbers.
void read_logit_bias(element e, SamplingParams& sampling, const ProtocolLimits& limits) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, "logit_bias must be an object of token ids to numbers");
  for (auto field : o) {
    const std::string key(field.key);
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > INT32_MAX)
      refuse(ErrorCode::bad_value, "logit_bias: \"" + utf8_prefix(key, 32) + "\" is not a token id");
    if (sampling.logit_bias.size() >= limits.max_logit_bias)
      refuse(ErrorCode::bad_value, "logit_bias: at most " + std::to_string(limits.max_logit_bias) + " entries");
    sampling.logit_bias.emplace_back(static_cast<int32_t>(id),
                                     static_cast<float>(as_number(field.value, "logit_bias[" + key + "]")));
  }
}

// Structured output, both protocols: OpenAI's response_format ({"type": "json_object"}
// or {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}; "text" is
// free text) and llama.cpp's `grammar` (GBNF text). The engine compiles them.
void read_output_grammar(const object& o, OutputGrammar& grammar) {
  const auto format = member(o, "response_format");
  const auto gbnf = member(o, "grammar");
  if (format && gbnf) refuse(ErrorCode::bad_value, "response_format and grammar cannot both be given");
  if (gbnf) {
    grammar = {OutputGrammar::Kind::gbnf, as_string(*gbnf, "grammar")};
    return;
  }
  if (!format) return;
  object f;
  if (format->get_object().get(f) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, "response_format must be an object");
  const auto type = member(f, "type");
  if (!type) refuse(ErrorCode::missing_field, "response_format.type is required");
  const std::string kind = as_string(*type, "response_format.type");
  if (kind == "text") return;
  if (kind == "json_object") {
    grammar = {OutputGrammar::Kind::json_object, {}};
    return;
  }
  if (kind != "json_schema")
    refuse(ErrorCode::bad_value, "response_format.type must be \"text\", \"json_object\" or \"json_schema\"");
  const auto spec = member(f, "json_schema");
  if (!spec) refuse(ErrorCode::missing_field, "response_format.json_schema is required");
  object js;
  if (spec->get_object().get(js) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, "response_format.json_schema must be an object");
  const auto schema = member(js, "schema");
  if (!schema) refuse(ErrorCode::missing_field, "response_format.json_schema.schema is required");
  if (schema->type() != element_type::OBJECT && schema->type() != element_type::BOOL)
    refuse(ErrorCode::bad_value, "response_format.json_schema.schema must be a JSON Schema object");
  grammar = {OutputGrammar::Kind::json_schema, minified(*schema)};
}

// The sampling and length fields both protocols share. Their values are the engine's
// to judge (validate_request); here only their types, and the gateway's bounds.
void read_sampling(const object& o, GenerateRequest& r, const ProtocolLimits& limits) {
  r.sampling.temperature = limits.default_temperature;
  r.max_tokens = limits.default_max_tokens;
  if (auto v = member(o, "temperature")) r.sampling.temperature = as_number(*v, "temperature");
  if (auto v = member(o, "top_p")) r.sampling.top_p = as_number(*v, "top_p");
  if (auto v = member(o, "top_k")) r.sampling.top_k = as_int32(*v, "top_k");
  if (auto v = member(o, "min_p")) r.sampling.min_p = as_number(*v, "min_p");
  if (auto v = member(o, "repetition_penalty")) r.sampling.repetition_penalty = as_number(*v, "repetition_penalty");
  if (auto v = member(o, "presence_penalty")) r.sampling.presence_penalty = as_number(*v, "presence_penalty");
  if (auto v = member(o, "frequency_penalty")) r.sampling.frequency_penalty = as_number(*v, "frequency_penalty");
  if (auto v = member(o, "logit_bias")) read_logit_bias(*v, r.sampling, limits);
  // Without a seed a request draws its own, so unseeded samples differ (as OpenAI's and
  // vLLM's); a given seed makes a sample repeatable.
  if (auto v = member(o, "seed"))
    r.sampling.seed = static_cast<uint64_t>(as_integer(*v, "seed", 0, INT64_MAX));
  else
    r.sampling.seed = fresh_seed();
  if (auto v = member(o, "max_tokens"))
    r.max_tokens = static_cast<int32_t>(as_integer(*v, "max_tokens", 1, limits.max_tokens_limit));
  if (auto v = member(o, "stop")) read_stop(*v, r.stop, limits);
  // K is the planner's unless the request names one: a fixed K drafts whatever the
  // batch, and under load on a steep verify curve that halves throughput. Except for a
  // seeded sample: the planner's K follows measured timings, and the draws a round
  // takes follow K, so only a fixed K gives the same output for the same seed twice.
  const bool seeded_sample = member(o, "seed") && r.sampling.temperature > 0;
  r.spec.adaptive = !seeded_sample;
  if (auto v = member(o, "speculative")) read_speculative(*v, r.spec);
  if (auto v = member(o, "ignore_eos")) r.ignore_eos = as_bool(*v, "ignore_eos");
  if (auto v = member(o, "cache_prompt")) r.cache_prompt = as_bool(*v, "cache_prompt");
  read_output_grammar(o, r.grammar);
}

// "auto" (the default), "none", "required", or {"type": "function", "function":
// {"name": ...}}; parallel_tool_calls. "required" and a function need tools, and the
// function must be one of them (the gateway checks when it builds their grammar).
ToolChoice read_tool_choice(const object& o, bool has_tools) {
  ToolChoice choice;
  if (auto v = member(o, "parallel_tool_calls")) choice.parallel = as_bool(*v, "parallel_tool_calls");
  auto v = member(o, "tool_choice");
  if (!v) return choice;
  if (v->type() == element_type::OBJECT) {
    const object c = v->get_object().value_unsafe();
    object f;
    const auto type = member(c, "type");
    if (!type || as_string(*type, "tool_choice.type") != "function")
      refuse(ErrorCode::bad_value, "tool_choice.type must be \"function\"");
    const auto function = member(c, "function");
    if (!function || function->get_object().get(f) != simdjson::SUCCESS)
      refuse(ErrorCode::missing_field, "tool_choice.function must be an object with a name");
    const auto name = member(f, "name");
    if (!name) refuse(ErrorCode::missing_field, "tool_choice.function.name is required");
    choice.mode = ToolChoice::Mode::function;
    choice.function = as_string(*name, "tool_choice.function.name");
  } else {
    const std::string mode = as_string(*v, "tool_choice");
    if (mode == "auto") return choice;
    if (mode == "none")
      choice.mode = ToolChoice::Mode::none;
    else if (mode == "required")
      choice.mode = ToolChoice::Mode::required;
    else
      refuse(ErrorCode::bad_value, "tool_choice must be \"auto\", \"none\", \"required\" or a function");
  }
  if (!has_tools && choice.mode != ToolChoice::Mode::none) refuse(ErrorCode::bad_value, "tool_choice needs tools");
  return choice;
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
  if (auto v = member(o, "logprobs"))
    p.request.sampling.logprobs = static_cast<int32_t>(as_integer(*v, "logprobs", 0, kMaxTopLogprobs));
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

}  // namespace

ClientMessage parse_client_message(std::string_view text, const ProtocolLimits& limits) {
  object o;
  try {
    o = parse_object(parser(), text);
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
  try {
    return parse_message_object(o, limits);
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), id_of(o, limits)};
  }
}

// Chat: `logprobs` true, with `top_logprobs` alternatives (which need logprobs, as
// OpenAI's API has it). Completions: `logprobs` N, the legacy form.
void read_openai_logprobs(const object& o, OpenAiRoute route, SamplingParams& sampling) {
  const auto logprobs = member(o, "logprobs");
  const auto top = member(o, "top_logprobs");
  if (route == OpenAiRoute::completions) {
    if (logprobs) sampling.logprobs = static_cast<int32_t>(as_integer(*logprobs, "logprobs", 0, kMaxTopLogprobs));
    return;
  }
  if (!logprobs || !as_bool(*logprobs, "logprobs")) {
    if (top) refuse(ErrorCode::bad_value, "top_logprobs needs logprobs: true");
    return;
  }
  sampling.logprobs = top ? static_cast<int32_t>(as_integer(*top, "top_logprobs", 0, kMaxTopLogprobs)) : 0;
}

std::variant<ProtocolError, GenerateParams> parse_openai_body(std::string_view body, OpenAiRoute route,
                                                              const ProtocolLimits& limits) {
  try {
    object o = parse_object(parser(), body);
    GenerateParams p;
    if (route == OpenAiRoute::chat_completions) {
      auto messages = member(o, "messages");
      if (!messages) refuse(ErrorCode::missing_field, "messages is required");
      read_messages(*messages, p.request.messages, limits);
      if (auto tools = member(o, "tools")) p.request.tools_json = read_tools(*tools);
      p.tool_choice = read_tool_choice(o, !p.request.tools_json.empty());
      p.parse_tool_calls = !p.request.tools_json.empty() && p.tool_choice.mode != ToolChoice::Mode::none;
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
    if (auto v = member(o, "n")) p.n = static_cast<int32_t>(as_integer(*v, "n", 1, limits.max_n));
    read_openai_logprobs(o, route, p.request.sampling);
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
    element root = parse_root(parser(), json);
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

uint64_t choice_seed(uint64_t seed, int32_t index) {
  if (index == 0) return seed;
  // splitmix64 of (seed, index): neighbouring seeds' choices do not share streams.
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string error_frame(const ProtocolError& error) {
  return serialize_json(boost::json::object{{"type", "error"},
                                            {"id", error.id ? boost::json::value(*error.id) : nullptr},
                                            {"code", wire_name(error.code)},
                                            {"message", error.message}});
}

}  // namespace specd::net
