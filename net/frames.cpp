#include "net/frames.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include "json/json_serialize.hpp"

namespace specd::net {

namespace json = boost::json;

namespace {

template <class Range>
json::array array_of(const Range& items) {
  return json::array(items.begin(), items.end());
}

json::object usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json::object spec_json(const SpecStats& s) {
  return {{"rounds", s.rounds},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"acceptance_rate", s.acceptance_rate()},
          {"tokens_per_round", s.tokens_per_round()},
          {"accepted_per_position", array_of(s.accepted_per_position)}};
}

json::object timings_json(const Timings& t) {
  return {{"queued_ms", t.queued_ms},
          {"first_token_ms", t.first_token_ms},
          {"total_ms", t.total_ms},
          {"tokens_per_second", t.tokens_per_second}};
}

const char* chunk_object(const OpenAiIdentity& who) { return who.chat ? "chat.completion.chunk" : "text_completion"; }

// An OpenAI response: its identity, then `choice` (the one choice; none when null), then `tail`'s members.
std::string openai_json(const OpenAiIdentity& who, const char* object, json::value choice, json::object tail = {}) {
  json::object o{{"id", who.id}, {"object", object}, {"created", who.created}, {"model", who.model}};
  o["choices"] = choice.is_null() ? json::array{} : json::array{std::move(choice)};
  for (auto& member : tail) o[member.key()] = std::move(member.value());
  return serialize_json(o);
}

// Choice `who.choice` carrying `content` (a chat delta or message, or a completion's text) and the finish reason.
json::object choice_json(const OpenAiIdentity& who, json::string_view content_key, json::value content,
                         const char* finish_reason, json::value logprobs = nullptr) {
  json::object choice{{"index", who.choice}};
  choice[content_key] = std::move(content);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason ? json::value(finish_reason) : nullptr;
  return choice;
}

// OpenAI's name of a token: its text when it is whole UTF-8, else its bytes escaped.
std::string token_name(const std::string& text) {
  if (valid_utf8(text)) return text;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "bytes:";
  for (unsigned char c : text) out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
  return out;
}

json::array bytes_of(const std::string& text) {
  json::array out;
  for (unsigned char c : text) out.emplace_back(static_cast<int64_t>(c));
  return out;
}

json::object logged_json(const LoggedToken& t) {
  return {{"token", token_name(t.text)}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}};
}

json::array chat_logprobs(std::span<const TokenLogprobs> tokens) {
  json::array content;
  for (const TokenLogprobs& t : tokens) {
    json::object entry = logged_json(t.chosen);
    json::array top;
    for (const LoggedToken& alternative : t.top) top.push_back(logged_json(alternative));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return content;
}

}  // namespace

json::value openai_logprobs(const OpenAiIdentity& who, std::span<const TokenLogprobs> tokens, int64_t& text_offset) {
  if (who.chat) return json::object{{"content", chat_logprobs(tokens)}};
  json::array names, values, tops, offsets;
  for (const TokenLogprobs& t : tokens) {
    names.emplace_back(token_name(t.chosen.text));
    values.emplace_back(t.chosen.logprob);
    json::object top;
    for (const LoggedToken& alternative : t.top) top[token_name(alternative.text)] = alternative.logprob;
    tops.emplace_back(std::move(top));
    offsets.emplace_back(text_offset);
    text_offset += static_cast<int64_t>(t.chosen.text.size());
  }
  return json::object{{"tokens", std::move(names)},
                      {"token_logprobs", std::move(values)},
                      {"top_logprobs", std::move(tops)},
                      {"text_offset", std::move(offsets)}};
}

std::string tokens_frame(std::string_view id, const Burst& b) {
  json::object frame{{"type", "tokens"},
                     {"id", id},
                     {"text", b.text},
                     {"token_ids", array_of(b.token_ids)},
                     {"pieces", array_of(b.pieces)},
                     {"drafted", b.drafted},
                     {"accepted", b.accepted}};
  if (!b.logprobs.empty()) frame["logprobs"] = chat_logprobs(b.logprobs);
  return serialize_json(frame);
}

std::string done_frame(std::string_view id, const GenerateResult& r) {
  return serialize_json(json::object{{"type", "done"},
                                     {"id", id},
                                     {"finish_reason", finish_reason_name(r.finish_reason)},
                                     {"usage", usage_json(r.usage)},
                                     {"spec", spec_json(r.spec)},
                                     {"timings", timings_json(r.timings)}});
}

const char* openai_finish_reason(FinishReason reason) { return finish_reason_name(reason); }

std::string openai_text_chunk(const OpenAiIdentity& who, std::string_view text, bool first, json::value logprobs) {
  if (!who.chat)
    return openai_json(who, chunk_object(who),
                       choice_json(who, "text", json::string_view(text), nullptr, std::move(logprobs)));
  json::object delta;
  if (first) delta["role"] = "assistant";
  delta["content"] = text;
  return openai_json(who, chunk_object(who), choice_json(who, "delta", std::move(delta), nullptr, std::move(logprobs)));
}

std::string openai_finish_chunk(const OpenAiIdentity& who, FinishReason reason) {
  json::value content = who.chat ? json::value(json::object{}) : json::value("");
  return openai_json(who, chunk_object(who),
                     choice_json(who, who.chat ? "delta" : "text", std::move(content), openai_finish_reason(reason)));
}

std::string openai_finish_chunk(const OpenAiIdentity& who, const char* finish_reason) {
  return openai_json(who, chunk_object(who), choice_json(who, "delta", json::object{}, finish_reason));
}

std::string openai_tool_calls_body(const OpenAiIdentity& who, const GenerateResult& r, const ParsedOutput& parsed) {
  json::array calls;
  for (const ParsedToolCall& c : parsed.calls) {
    calls.push_back(json::object{
        {"id", c.id}, {"type", "function"}, {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
  }
  json::object message{{"role", "assistant"}};
  message["content"] = parsed.content.empty() ? json::value(nullptr) : json::value(parsed.content);
  message["tool_calls"] = std::move(calls);
  // Calls found in an answer cut by max_tokens: "length", as the streamed answer says.
  const char* finish = r.finish_reason == FinishReason::length ? "length" : "tool_calls";
  return openai_json(who, "chat.completion", choice_json(who, "message", std::move(message), finish),
                     {{"usage", usage_json(r.usage)}, {"spec", spec_json(r.spec)}});
}

std::vector<std::string> openai_tool_call_chunks(const OpenAiIdentity& who, const std::vector<ToolCallDelta>& deltas,
                                                 bool first) {
  std::vector<std::string> chunks;
  for (const ToolCallDelta& d : deltas) {
    const auto index = static_cast<int64_t>(d.index);
    json::object call{{"index", index}};
    if (!d.name.empty()) {
      call["id"] = d.id;
      call["type"] = "function";
      call["function"] = json::object{{"name", d.name}, {"arguments", ""}};
    } else {
      call["function"] = json::object{{"arguments", d.arguments}};
    }
    json::object delta;
    if (first && chunks.empty()) {
      delta["role"] = "assistant";
      delta["content"] = nullptr;
    }
    delta["tool_calls"] = json::array{std::move(call)};
    chunks.push_back(openai_json(who, chunk_object(who), choice_json(who, "delta", std::move(delta), nullptr)));
  }
  return chunks;
}

std::string openai_usage_chunk(const OpenAiIdentity& who, const Usage& usage) {
  return openai_json(who, chunk_object(who), nullptr, {{"usage", usage_json(usage)}});
}

std::string openai_body(const OpenAiIdentity& who, const GenerateResult& r) {
  const char* finish = openai_finish_reason(r.finish_reason);
  int64_t text_offset = 0;
  json::value logprobs = r.logprobs.empty() ? json::value(nullptr) : openai_logprobs(who, r.logprobs, text_offset);
  json::object choice = who.chat ? choice_json(who, "message", json::object{{"role", "assistant"}, {"content", r.text}},
                                               finish, std::move(logprobs))
                                 : choice_json(who, "text", json::string_view(r.text), finish, std::move(logprobs));
  return openai_json(who, who.chat ? "chat.completion" : "text_completion", std::move(choice),
                     {{"usage", usage_json(r.usage)}, {"spec", spec_json(r.spec)}});
}

Usage choices_usage(const std::vector<GenerateResult>& results) {
  Usage usage = results.at(0).usage;
  usage.completion_tokens = 0;
  for (const GenerateResult& r : results) usage.completion_tokens += r.usage.completion_tokens;
  return usage;
}

std::string openai_choices_body(const std::vector<std::string>& bodies, const std::vector<GenerateResult>& results) {
  json::object out = json::parse(bodies.at(0)).as_object();
  json::array choices;
  for (const std::string& body : bodies)
    choices.push_back(json::parse(body).as_object().at("choices").as_array().at(0));
  SpecStats spec;
  for (const GenerateResult& r : results) {
    spec.rounds += r.spec.rounds;
    spec.drafted += r.spec.drafted;
    spec.accepted += r.spec.accepted;
    spec.emitted += r.spec.emitted;
    spec.rejections += r.spec.rejections;
    auto& per = spec.accepted_per_position;
    if (per.size() < r.spec.accepted_per_position.size()) per.resize(r.spec.accepted_per_position.size(), 0);
    for (size_t i = 0; i < r.spec.accepted_per_position.size(); ++i) per[i] += r.spec.accepted_per_position[i];
  }
  out["choices"] = std::move(choices);
  out["usage"] = usage_json(choices_usage(results));
  out["spec"] = spec_json(spec);
  return serialize_json(out);
}

std::string openai_error_body(WireCode code, std::string_view message) {
  return serialize_json(
      json::object{{"error", json::object{{"message", message},
                                          {"type", server_side(code) ? "server_error" : "invalid_request_error"},
                                          {"param", nullptr},
                                          {"code", wire_name(code)}}}});
}

}  // namespace specd::net
