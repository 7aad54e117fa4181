#include "net/frames.hpp"

#include "net/json_writer.hpp"

namespace specd::net {

namespace {

void write_ids(JsonWriter& w, const std::vector<int32_t>& ids) {
  w.begin_array();
  for (int32_t id : ids) w.value(id);
  w.end_array();
}

void write_usage(JsonWriter& w, const Usage& u) {
  w.key("usage").begin_object();
  w.member("prompt_tokens", u.prompt_tokens).member("completion_tokens", u.completion_tokens);
  w.member("total_tokens", u.prompt_tokens + u.completion_tokens).end_object();
}

void write_spec(JsonWriter& w, const SpecStats& s) {
  w.key("spec").begin_object();
  w.member("rounds", s.rounds).member("drafted", s.drafted).member("accepted", s.accepted);
  w.member("acceptance_rate", s.acceptance_rate()).member("tokens_per_round", s.tokens_per_round());
  w.key("accepted_per_position").begin_array();
  for (int64_t n : s.accepted_per_position) w.value(n);
  w.end_array().end_object();
}

void write_timings(JsonWriter& w, const Timings& t) {
  w.key("timings").begin_object();
  w.member("queued_ms", t.queued_ms).member("first_token_ms", t.first_token_ms);
  w.member("total_ms", t.total_ms).member("tokens_per_second", t.tokens_per_second).end_object();
}

void begin_openai(JsonWriter& w, const OpenAiIdentity& who, const char* object) {
  w.begin_object().member("id", who.id).member("object", object).member("created", who.created);
  w.member("model", who.model);
}

const char* chunk_object(const OpenAiIdentity& who) { return who.chat ? "chat.completion.chunk" : "text_completion"; }

}  // namespace

std::string tokens_frame(std::string_view id, const Burst& b) {
  JsonWriter w;
  w.begin_object().member("type", "tokens").member("id", id).member("text", b.text).key("token_ids");
  write_ids(w, b.token_ids);
  w.key("pieces").begin_array();
  for (const std::string& piece : b.pieces) w.value(piece);
  w.end_array();
  w.member("drafted", b.drafted).member("accepted", b.accepted).end_object();
  return w.take();
}

std::string done_frame(std::string_view id, const GenerateResult& r) {
  JsonWriter w;
  w.begin_object().member("type", "done").member("id", id).member("finish_reason", finish_reason_name(r.finish_reason));
  write_usage(w, r.usage);
  write_spec(w, r.spec);
  write_timings(w, r.timings);
  w.end_object();
  return w.take();
}

const char* openai_finish_reason(FinishReason reason) { return finish_reason_name(reason); }

std::string openai_text_chunk(const OpenAiIdentity& who, std::string_view text, bool first) {
  JsonWriter w;
  begin_openai(w, who, chunk_object(who));
  w.key("choices").begin_array().begin_object().member("index", 0);
  if (who.chat) {
    w.key("delta").begin_object();
    if (first) w.member("role", "assistant");
    w.member("content", text).end_object();
  } else {
    w.member("text", text);
  }
  w.key("logprobs").null().key("finish_reason").null().end_object().end_array().end_object();
  return w.take();
}

std::string openai_finish_chunk(const OpenAiIdentity& who, FinishReason reason) {
  JsonWriter w;
  begin_openai(w, who, chunk_object(who));
  w.key("choices").begin_array().begin_object().member("index", 0);
  if (who.chat)
    w.key("delta").begin_object().end_object();
  else
    w.member("text", "");
  w.key("logprobs").null().member("finish_reason", openai_finish_reason(reason)).end_object().end_array().end_object();
  return w.take();
}

std::string openai_usage_chunk(const OpenAiIdentity& who, const Usage& usage) {
  JsonWriter w;
  begin_openai(w, who, chunk_object(who));
  w.key("choices").begin_array().end_array();
  write_usage(w, usage);
  w.end_object();
  return w.take();
}

std::string openai_body(const OpenAiIdentity& who, const GenerateResult& r) {
  JsonWriter w;
  begin_openai(w, who, who.chat ? "chat.completion" : "text_completion");
  w.key("choices").begin_array().begin_object().member("index", 0);
  if (who.chat)
    w.key("message").begin_object().member("role", "assistant").member("content", r.text).end_object();
  else
    w.member("text", r.text);
  w.key("logprobs").null().member("finish_reason", openai_finish_reason(r.finish_reason)).end_object().end_array();
  write_usage(w, r.usage);
  write_spec(w, r.spec);
  w.end_object();
  return w.take();
}

std::string openai_error_body(ErrorCode code, std::string_view message) {
  JsonWriter w;
  const bool server_side =
      code == ErrorCode::internal || code == ErrorCode::overloaded || code == ErrorCode::shutting_down;
  w.begin_object().key("error").begin_object().member("message", message);
  w.member("type", server_side ? "server_error" : "invalid_request_error").key("param").null();
  w.member("code", error_code_name(code)).end_object().end_object();
  return w.take();
}

}  // namespace specd::net
