#include "net/openai_stream.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <optional>
#include <variant>

#include "actors/asio_aliases.hpp"
#include "net/client_stream.hpp"
#include "net/cors.hpp"
#include "net/frames.hpp"
#include "net/gateway.hpp"
#include "net/request_timing.hpp"
#include "net/tool_call_grammar.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using actors::use_tuple;

namespace {

using Item = ClientStream::Item;

std::atomic<uint64_t> next_number{1};

Route metrics_route(OpenAiRoute r) {
  return r == OpenAiRoute::chat_completions ? Route::chat_completions : Route::completions;
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

asio::awaitable<bool> write_chunk(beast::tcp_stream& stream, double timeout, std::string data) {
  stream.expires_after(seconds(timeout));
  auto chunk = http::make_chunk(asio::buffer(data));
  auto [ec, n] = co_await asio::async_write(stream, chunk, use_tuple);
  stream.expires_never();
  co_return !ec;
}

std::string sse(std::string_view json) { return "data: " + std::string(json) + "\n\n"; }

// tool_choice "required" or a function: the answer decodes under the grammar of the
// calls in the model's syntax. A refused grammar (a tool's schema outside the subset) is
// a ProtocolError like the body's own.
void add_tool_grammar(std::variant<ProtocolError, GenerateParams>& parsed, ToolCallFormat format) {
  auto* p = std::get_if<GenerateParams>(&parsed);
  if (!p) return;
  const ToolChoice::Mode mode = p->tool_choice.mode;
  if (mode != ToolChoice::Mode::required && mode != ToolChoice::Mode::function) return;
  if (p->request.grammar.kind != OutputGrammar::Kind::none) {
    parsed = ProtocolError{ErrorCode::bad_value,
                           "tool_choice \"required\" or a function cannot be combined with response_format or "
                           "grammar",
                           std::nullopt};
    return;
  }
  try {
    p->request.grammar = {OutputGrammar::Kind::gbnf, tool_call_grammar(format, p->request.tools_json, p->tool_choice)};
  } catch (const SpecdError& e) {
    parsed = ProtocolError{e.code(), e.message(), std::nullopt};
  }
}

// The syntax a request's answer is parsed in.
ToolCallFormat call_format(const Gateway& g, const GenerateParams& p) {
  const ToolChoice::Mode mode = p.tool_choice.mode;
  const bool forced = mode == ToolChoice::Mode::required || mode == ToolChoice::Mode::function;
  return forced ? forced_call_format(g.tool_call_format()) : g.tool_call_format();
}

// The engine requests of one HTTP request: one per choice (OpenAI's `n`), the first
// under the request's own id.
struct Choices {
  std::vector<std::string> ids;
  int32_t index_of(const std::string& id) const {
    const auto it = std::find(ids.begin(), ids.end(), id);
    return it == ids.end() ? -1 : static_cast<int32_t>(it - ids.begin());
  }
};

Choices choice_ids(const std::string& id, int32_t n) {
  Choices c{{id}};
  for (int32_t i = 1; i < n; ++i) c.ids.push_back(id + "-" + std::to_string(i));
  return c;
}

// One choice's SSE chunks: what it has sent, the tool calls it holds back, the logprobs
// of tokens whose text has not gone out yet.
struct ChoiceEvents {
  OpenAiIdentity who;  // who.choice: its index
  bool sent_first = false;
  std::optional<ToolCallStream> tools;
  std::vector<TokenLogprobs> logprobs;
  int64_t text_offset = 0;
  std::vector<std::string> call_ids;  // of the calls started

  boost::json::value take_logprobs() {
    if (logprobs.empty()) return nullptr;
    boost::json::value out = openai_logprobs(who, logprobs, text_offset);
    logprobs.clear();
    return out;
  }
  // Content, then the call deltas ready now, as SSE events.
  std::string events(StreamStep step) {
    std::string out;
    if (!step.content.empty() || (!sent_first && step.calls.empty())) {
      out += sse(openai_text_chunk(who, step.content, !sent_first, take_logprobs()));
      sent_first = true;
    }
    for (ToolCallDelta& d : step.calls) {
      if (d.index == call_ids.size()) call_ids.push_back(new_tool_call_id());
      if (!d.name.empty()) d.id = call_ids[d.index];
    }
    for (const std::string& chunk : openai_tool_call_chunks(who, step.calls, !sent_first)) out += sse(chunk);
    sent_first = sent_first || !step.calls.empty();
    return out;
  }
  std::string burst(const Burst& b) {
    logprobs.insert(logprobs.end(), b.logprobs.begin(), b.logprobs.end());
    return events(tools ? tools->feed(b.text) : StreamStep{b.text, {}});  // empty: logprobs ride with the next
  }
  // The finish chunk (and what the tool parser still held).
  std::string finish(const GenerateResult& result) {
    std::string tail;
    const char* reason = openai_finish_reason(result.finish_reason);
    if (tools) {
      StreamStep end = tools->finish();
      if (!end.content.empty() || !end.calls.empty()) tail += events(std::move(end));
      // An answer cut by max_tokens stays "length", as OpenAI reports it.
      if (!call_ids.empty() && result.finish_reason != FinishReason::length) reason = "tool_calls";
    }
    if (!logprobs.empty()) tail += sse(openai_text_chunk(who, "", !sent_first, take_logprobs()));
    return tail + sse(openai_finish_chunk(who, reason));
  }
};

asio::awaitable<bool> write_last_chunk(GenerationContext& c, double timeout, std::string tail) {
  const bool written = co_await write_chunk(c.stream, timeout, std::move(tail));
  if (!written) co_return false;
  c.stream.expires_after(seconds(timeout));
  auto last = http::make_chunk_last();
  auto [ec, n] = co_await asio::async_write(c.stream, last, use_tuple);
  c.stream.expires_never();
  co_return !ec;
}

// The SSE events after the header: each choice's text chunks (its `index`), its finish,
// then, once every choice finished, the usage and [DONE]. An error ends the stream.
asio::awaitable<bool> stream_events(GenerationContext& c, ClientStream& s, const OpenAiIdentity& who,
                                    const GenerateParams& p, const Choices& choices, Item first) {
  const double timeout = c.gateway.config().http_idle_seconds;
  std::vector<ChoiceEvents> streams(choices.ids.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i].who = who;
    streams[i].who.choice = static_cast<int64_t>(i);
    if (p.parse_tool_calls) streams[i].tools.emplace(call_format(c.gateway, p));
  }
  std::vector<GenerateResult> results;
  std::optional<Item> next(std::move(first));
  for (;;) {
    if (!next) next = co_await s.next();
    if (!next) co_return false;
    Item item = std::move(*next);
    next.reset();
    const int32_t index = choices.index_of(item.id);
    if (index < 0) continue;
    ChoiceEvents& choice = streams[static_cast<size_t>(index)];
    if (auto* burst = std::get_if<Burst>(&item.event)) {
      std::string chunk = choice.burst(*burst);
      if (chunk.empty()) continue;
      const bool written = co_await write_chunk(c.stream, timeout, std::move(chunk));
      if (!written) co_return false;
      if (burst->on_written) burst->on_written();
      continue;
    }
    auto* result = std::get_if<GenerateResult>(&item.event);
    if (!result) continue;
    if (result->error) {
      std::string tail = sse(openai_error_body(result->error->code, result->error->message)) + "data: [DONE]\n\n";
      co_return co_await write_last_chunk(c, timeout, std::move(tail));
    }
    std::string tail = choice.finish(*result);
    results.push_back(std::move(*result));
    if (results.size() < choices.ids.size()) {
      const bool written = co_await write_chunk(c.stream, timeout, std::move(tail));
      if (!written) co_return false;
      continue;
    }
    if (p.include_usage) tail += sse(openai_usage_chunk(who, choices_usage(results)));
    co_return co_await write_last_chunk(c, timeout, tail + "data: [DONE]\n\n");
  }
}

asio::awaitable<bool> respond_stream(GenerationContext& c, const HttpRequest& request, ClientStream& s,
                                     const OpenAiIdentity& who, const GenerateParams& p, const Choices& choices,
                                     Item first) {
  if (auto* r = std::get_if<GenerateResult>(&first.event); r && r->error) {
    // Refused before any token: a plain HTTP error the client's library turns into an exception.
    std::string body = openai_error_body(r->error->code, r->error->message);
    co_return co_await write_json_response(c.stream, request, http_status_for(r->error->code), std::move(body),
                                           c.allow_origin);
  }
  http::response<http::empty_body> response{http::status::ok, request.version()};
  set_cors_headers(response.base(), c.allow_origin);
  response.set(http::field::server, "specd");
  response.set(http::field::content_type, "text/event-stream");
  response.set(http::field::cache_control, "no-cache");
  response.chunked(true);
  response.keep_alive(request.keep_alive());
  http::response_serializer<http::empty_body> serializer(response);
  c.stream.expires_after(seconds(c.gateway.config().http_idle_seconds));
  auto [ec, n] = co_await http::async_write_header(c.stream, serializer, use_tuple);
  c.stream.expires_never();
  if (ec) co_return false;
  const bool ok = co_await stream_events(c, s, who, p, choices, std::move(first));
  co_return ok&& request.keep_alive();
}

// The body of a finished request: with tool calls when the request asked for them and
// the answer holds some.
std::string whole_body(GenerationContext& c, const OpenAiIdentity& who, const GenerateParams& p,
                       const GenerateResult& r) {
  if (!p.parse_tool_calls) return openai_body(who, r);
  ParsedOutput parsed = parse_tool_calls(call_format(c.gateway, p), r.text);
  if (parsed.calls.empty()) return openai_body(who, r);
  for (ParsedToolCall& call : parsed.calls) call.id = new_tool_call_id();
  return openai_tool_calls_body(who, r, parsed);
}

asio::awaitable<bool> respond_whole(GenerationContext& c, const HttpRequest& request, ClientStream& s,
                                    const OpenAiIdentity& who, const GenerateParams& p, const Choices& choices,
                                    Item first) {
  std::vector<std::optional<GenerateResult>> results(choices.ids.size());
  size_t finished = 0;
  std::optional<Item> next(std::move(first));
  for (;;) {
    if (!next) next = co_await s.next();
    if (!next) co_return false;
    Item item = std::move(*next);
    next.reset();
    auto* r = std::get_if<GenerateResult>(&item.event);
    const int32_t index = choices.index_of(item.id);
    if (!r || index < 0) continue;
    if (r->error) {  // one choice failed: the request did (the others are cancelled when the stream closes)
      std::string body = openai_error_body(r->error->code, r->error->message);
      co_return co_await write_json_response(c.stream, request, http_status_for(r->error->code), std::move(body),
                                             c.allow_origin);
    }
    results[static_cast<size_t>(index)] = std::move(*r);
    if (++finished < results.size()) continue;
    std::vector<std::string> bodies;
    std::vector<GenerateResult> done;
    for (size_t i = 0; i < results.size(); ++i) {
      OpenAiIdentity choice = who;
      choice.choice = static_cast<int64_t>(i);
      bodies.push_back(whole_body(c, choice, p, *results[i]));
      done.push_back(std::move(*results[i]));
    }
    std::string body = bodies.size() == 1 ? std::move(bodies[0]) : openai_choices_body(bodies, done);
    co_return co_await write_json_response(c.stream, request, http::status::ok, std::move(body), c.allow_origin);
  }
}

// The request of choice `index`: its own id and seed (protocol.hpp, choice_seed).
GenerateRequest choice_request(const GenerateRequest& r, const Choices& choices, int32_t index) {
  GenerateRequest out = r;
  out.id = choices.ids[static_cast<size_t>(index)];
  out.sampling.seed = choice_seed(r.sampling.seed, index);
  return out;
}

// Runs an accepted request through its ClientStream and answers it: SSE or one body.
// With n > 1 choice 0 goes first, and the others once its first token came: its
// prompt's full KV blocks are then in the prefix cache, which the others map instead of
// computing them again. A refusal of choice 0 (a bad request) answers for all of them.
asio::awaitable<bool> respond(GenerationContext& c, const HttpRequest& request, OpenAiRoute route,
                              const GenerateParams& p, GenerateRequest engine_request, const OpenAiIdentity& who) {
  auto s = std::make_shared<ClientStream>(c.gateway, c.stream.get_executor(), metrics_route(route));
  const Choices choices = choice_ids(engine_request.id, p.n);
  s->submit(choices.ids[0], choice_request(engine_request, choices, 0), p.stream || p.n > 1);
  c.active = s.get();
  std::optional<Item> first = co_await s->next();
  bool keep_alive = false;
  if (first) {
    const auto* refused = std::get_if<GenerateResult>(&first->event);
    if (!refused || !refused->error) {
      for (int32_t i = 1; i < p.n; ++i)
        s->submit(choices.ids[static_cast<size_t>(i)], choice_request(engine_request, choices, i), p.stream,
                  Counted::further_choice);
    }
    keep_alive = p.stream ? co_await respond_stream(c, request, *s, who, p, choices, std::move(*first))
                          : co_await respond_whole(c, request, *s, who, p, choices, std::move(*first));
  }
  c.active = nullptr;
  s->close();  // cancels the requests if the client went away before their end
  co_return keep_alive;
}

}  // namespace

asio::awaitable<bool> write_json_response(beast::tcp_stream& stream, const HttpRequest& request, http::status status,
                                          std::string body, std::string_view allow_origin) {
  http::response<http::string_body> response{status, request.version()};
  set_cors_headers(response.base(), allow_origin);
  response.set(http::field::server, "specd");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  auto [ec, n] = co_await http::async_write(stream, response, use_tuple);
  co_return !ec && request.keep_alive();
}

asio::awaitable<bool> serve_openai(GenerationContext c, const HttpRequest& request, OpenAiRoute route) {
  Gateway& g = c.gateway;
  auto parsed = parse_openai_body(request.body(), route, g.config().protocol);
  add_tool_grammar(parsed, g.tool_call_format());
  if (auto* e = std::get_if<ProtocolError>(&parsed)) {
    g.metrics().request_error(metrics_route(route), e->code);
    std::string body = openai_error_body(e->code, e->message);
    co_return co_await write_json_response(c.stream, request, http_status_for(e->code), std::move(body),
                                           c.allow_origin);
  }
  GenerateParams& p = std::get<GenerateParams>(parsed);
  const uint64_t number = next_number++;
  GenerateRequest engine_request = std::move(p.request);
  engine_request.id = "http-" + std::to_string(number);
  const bool chat = route == OpenAiRoute::chat_completions;
  const OpenAiIdentity who{(chat ? "chatcmpl-" : "cmpl-") + std::to_string(number),
                           static_cast<int64_t>(std::time(nullptr)), g.config().model_name, chat};
  co_return co_await respond(c, request, route, p, std::move(engine_request), who);
}

}  // namespace specd::net
