#include "tools/loadgen/sse_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <optional>
#include <string>

#include "tools/loadgen/client_requests.hpp"

namespace specd::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// The error code an HTTP error response names ({"error":{"code":..}}), else http_<status>.
std::string error_code_of(unsigned status, const std::string& body) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* err = v.as_object().if_contains("error"); err && err->is_object()) {
      if (const auto* code = err->as_object().if_contains("code"); code && code->is_string()) {
        return std::string(code->as_string());
      }
    }
  }
  return "http_" + std::to_string(status);
}

// Splits complete events off `pending` and feeds their data lines; true once ended.
bool feed_events(StreamTimer& timer, std::string& pending) {
  for (;;) {
    const size_t end = pending.find("\n\n");
    if (end == std::string::npos) return false;
    const std::string event = pending.substr(0, end);
    pending.erase(0, end + 2);
    size_t pos = 0;
    while (pos <= event.size()) {
      size_t eol = event.find('\n', pos);
      if (eol == std::string::npos) eol = event.size();
      std::string_view line(event.data() + pos, eol - pos);
      if (line.starts_with("data:")) {
        line.remove_prefix(line.size() > 5 && line[5] == ' ' ? 6 : 5);
        if (on_sse_data(timer, line, Clock::now())) return true;
      }
      pos = eol + 1;
    }
  }
}

// Sends one request and reads its stream to the end; false when the connection is unusable.
asio::awaitable<bool> one_request(LevelContext& ctx, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  StreamTimer& timer, std::string body, const std::string& session) {
  const LoadgenOptions& o = ctx.options;
  http::request<http::string_body> req{http::verb::post, sse_target(o), 11};
  req.set(http::field::host, o.host + ":" + std::to_string(o.port));
  req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, "text/event-stream");
  if (!o.token.empty()) req.set(http::field::authorization, "Bearer " + o.token);
  if (!session.empty()) req.set("X-Session-Id", session);
  req.body() = std::move(body);
  req.prepare_payload();
  auto [wec, wn] = co_await http::async_write(stream, req, tuple_awaitable);
  if (wec) {
    timer.fail(Clock::now(), ctx.timed_out ? "timeout" : "write_failed");
    co_return false;
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, tuple_awaitable);
  if (hec) {
    timer.fail(Clock::now(), ctx.timed_out ? "timeout" : "read_failed");
    co_return false;
  }
  const unsigned status = parser.get().result_int();
  std::string pending;
  char chunk[16384];
  bool ended = false;
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    // read_some: returns as soon as some of the body is in, so events are timed on arrival.
    auto [rec, rn] = co_await http::async_read_some(stream, buffer, parser, tuple_awaitable);
    if (rec == http::error::need_buffer) rec = {};
    if (rec) {
      timer.fail(Clock::now(), ctx.timed_out ? "timeout" : "read_failed");
      co_return false;
    }
    pending.append(chunk, sizeof chunk - parser.get().body().size);
    if (status == 200 && !ended) ended = feed_events(timer, pending);
  }
  if (status != 200) {
    timer.fail(Clock::now(), error_code_of(status, pending));
  } else if (!timer.ended()) {
    timer.fail(Clock::now(), "truncated_stream");  // the body ended without [DONE]
  }
  co_return parser.get().keep_alive();
}

asio::awaitable<bool> connect(LevelContext& ctx, beast::tcp_stream& stream) {
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  const std::string port = std::to_string(ctx.options.port);
  auto [ec, endpoints] = co_await resolver.async_resolve(ctx.options.host, port, tuple_awaitable);
  if (ec) co_return false;
  auto [cec, ep] = co_await stream.async_connect(endpoints, tuple_awaitable);
  co_return !cec;
}

}  // namespace

asio::awaitable<void> run_sse_client(LevelContext& ctx, int32_t client_index) {
  auto executor = co_await asio::this_coro::executor;
  std::optional<beast::tcp_stream> stream;  // a fresh one after the server closes a connection
  ctx.closers[static_cast<size_t>(client_index)] = [&stream] {
    if (stream) stream->socket().close();
  };
  beast::flat_buffer buffer;
  bool connected = false;
  ClientRequests requests(ctx.options);
  const std::string session = session_key(ctx.options, client_index);
  for (int32_t i = 0; i < requests.count(); ++i) {
    if (ctx.timed_out) {
      ctx.unsent(requests.count() - i, "timeout", requests.next_turn());
      break;
    }
    if (!connected) {
      buffer.clear();
      stream.emplace(executor);
      connected = co_await connect(ctx, *stream);
      if (!connected) {
        ctx.unsent(requests.count() - i, ctx.timed_out ? "timeout" : "connect_failed", requests.next_turn());
        break;
      }
    }
    std::string body = requests.next("", ctx.take_request_number());
    StreamTimer timer(Clock::now());
    ctx.stream_started();
    connected = co_await one_request(ctx, *stream, buffer, timer, std::move(body), session);
    const bool goes_on = requests.ended(timer.record());
    ctx.stream_ended(std::move(timer.record()));
    if (!goes_on) {
      ctx.unsent(requests.count() - i - 1, "previous_turn_failed", requests.next_turn());
      break;
    }
  }
  ctx.closers[static_cast<size_t>(client_index)] = nullptr;
  if (stream) {
    beast::error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
}

}  // namespace specd::loadgen
