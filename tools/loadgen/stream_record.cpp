#include "tools/loadgen/stream_record.hpp"

#include <boost/json.hpp>

namespace specd::loadgen {

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t int_or(const boost::json::object& o, std::string_view key, int64_t fallback) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : v && v->is_uint64() ? static_cast<int64_t>(v->as_uint64()) : fallback;
}

std::string string_or(const boost::json::object& o, std::string_view key, std::string fallback) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : fallback;
}

// Returns whether `o` carried a usage object.
bool read_usage(StreamTimer& timer, const boost::json::object& o) {
  const auto* usage = o.if_contains("usage");
  if (!usage || !usage->is_object()) return false;
  const auto& u = usage->as_object();
  StreamRecord& r = timer.record();
  r.completion_tokens = int_or(u, "completion_tokens", -1);
  r.prompt_tokens = int_or(u, "prompt_tokens", -1);
  const auto* details = u.if_contains("prompt_tokens_details");
  r.cached_tokens = details && details->is_object() ? int_or(details->as_object(), "cached_tokens", -1) : -1;
  return true;
}

}  // namespace

void StreamTimer::burst(Clock::time_point at, int64_t tokens, int64_t drafted, int64_t accepted,
                        std::string_view text) {
  record_.drafted += drafted;
  record_.accepted += accepted;
  record_.text += text;
  if (tokens <= 0) return;
  if (record_.bursts == 0) {
    record_.ttft_ms = ms_between(sent_, at);
  } else {
    const double gap = ms_between(last_, at);
    record_.inter_burst_ms.push_back(gap);
    record_.inter_token_ms.insert(record_.inter_token_ms.end(), static_cast<size_t>(tokens), gap / tokens);
  }
  last_ = at;
  record_.tokens += tokens;
  record_.bursts += 1;
}

void StreamTimer::finish(Clock::time_point at, std::string finish_reason) {
  record_.finish_reason = std::move(finish_reason);
  record_.total_ms = ms_between(sent_, at);
  ended_ = true;
}

void StreamTimer::fail(Clock::time_point at, std::string code) {
  record_.error = std::move(code);
  record_.total_ms = ms_between(sent_, at);
  ended_ = true;
}

bool on_ws_frame(StreamTimer& timer, const boost::json::object& frame, Clock::time_point at) {
  const std::string type = string_or(frame, "type", "");
  if (type == "tokens") {
    const auto* ids = frame.if_contains("token_ids");
    const int64_t tokens = ids && ids->is_array() ? static_cast<int64_t>(ids->as_array().size()) : 0;
    timer.burst(at, tokens, int_or(frame, "drafted", 0), int_or(frame, "accepted", 0), string_or(frame, "text", ""));
    return false;
  }
  if (type == "done") {
    read_usage(timer, frame);
    const std::string reason = string_or(frame, "finish_reason", "");
    // A server that ends a request with finish_reason "error" reports it as an error too.
    if (reason == "error") {
      timer.fail(at, string_or(frame, "code", "error"));
    } else {
      timer.finish(at, reason);
    }
    return true;
  }
  if (type == "error") {
    timer.fail(at, string_or(frame, "code", "error"));
    return true;
  }
  timer.fail(at, "bad_frame");
  return true;
}

bool on_sse_data(StreamTimer& timer, std::string_view data, Clock::time_point at) {
  if (data == "[DONE]") {
    if (!timer.ended()) timer.finish(at, timer.record().finish_reason);
    return true;
  }
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(data, ec);
  if (ec || !v.is_object()) {
    timer.fail(at, "bad_frame");
    return true;
  }
  const auto& chunk = v.as_object();
  if (const auto* err = chunk.if_contains("error"); err && err->is_object()) {
    timer.fail(at, string_or(err->as_object(), "code", string_or(err->as_object(), "type", "error")));
    return true;
  }
  // The usage chunk's count replaces the count of text chunks.
  if (read_usage(timer, chunk) && timer.record().completion_tokens >= 0) {
    timer.record().tokens = timer.record().completion_tokens;
  }
  const auto* choices = chunk.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) return false;
  const auto& choice = choices->as_array().front().as_object();
  std::string text = string_or(choice, "text", "");
  if (const auto* delta = choice.if_contains("delta"); delta && delta->is_object()) {
    text = string_or(delta->as_object(), "content", text);
  }
  int64_t tokens = text.empty() ? 0 : 1;
  if (const auto* ids = chunk.if_contains("token_ids"); ids && ids->is_array()) {
    tokens = static_cast<int64_t>(ids->as_array().size());
  }
  timer.burst(at, tokens, int_or(chunk, "drafted", 0), int_or(chunk, "accepted", 0), text);
  if (const auto* reason = choice.if_contains("finish_reason"); reason && reason->is_string()) {
    timer.record().finish_reason = std::string(reason->as_string());
  }
  return false;
}

}  // namespace specd::loadgen
