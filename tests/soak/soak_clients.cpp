#include "tests/soak/soak_clients.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "net/ws_client.hpp"
#include "tools/loadgen/loadgen_options.hpp"
#include "tools/loadgen/stream_record.hpp"

namespace specd::soak {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using loadgen::StreamTimer;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// The request's body: prompts, sampling and speculation vary with its number.
std::string request_json(const SoakOptions& o, const Plan& plan, bool websocket, const std::string& id) {
  static const char* const prompts[] = {"ROMEO:", "JULIET:\n", "First Citizen:\n", "KING RICHARD III:\nNow is the"};
  loadgen::LoadgenOptions r;
  r.transport = websocket ? loadgen::Transport::ws : loadgen::Transport::sse;
  r.prompt = prompts[plan.number % 4];
  r.max_tokens = plan.max_tokens;
  r.temperature = plan.number % 3 == 0 ? 0.8 : 0.0;
  r.seed = o.seed;
  r.speculative = plan.number % 5 != 0;
  r.k = plan.number % 5 == 1 ? "auto" : std::to_string(1 + plan.number % 4);
  return loadgen::request_json(r, id, plan.number);
}

// Books a stream that ended (not dropped): its error, or how it finished.
void settle(Tally& t, const loadgen::StreamRecord& r, bool cancel_sent) {
  if (r.error) return t.error(*r.error);
  if (r.completion_tokens != r.tokens) return t.error("usage_mismatch");
  t.tokens += r.tokens;
  if (r.finish_reason == "cancelled") {
    if (!cancel_sent) return t.error("cancelled_unasked");
    ++t.cancelled;
  } else if (r.finish_reason == "length" || r.finish_reason == "stop") {
    ++t.completed;
    if (cancel_sent) ++t.cancel_crossed;
  } else {
    t.error("finish_reason_" + r.finish_reason);
  }
}

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(tuple_awaitable);
}

// One WebSocket request on an open connection; false when the connection is gone
// (dropped on purpose, or lost).
asio::awaitable<bool> ws_request(SoakContext& ctx, net::WsClient& client, const Plan& plan, const std::string& id) {
  Tally& t = ctx.ws;
  ++t.requests;
  if (co_await client.send_text(request_json(ctx.options, plan, true, id))) {
    t.error("send_failed");
    co_return false;
  }
  StreamTimer timer(Clock::now());
  int32_t frames = 0;
  bool cancel_sent = false;
  for (;;) {
    if (plan.fate == Fate::disconnect && frames >= plan.after) {
      ++t.disconnected;
      co_return false;
    }
    if (plan.fate == Fate::cancel && !cancel_sent && frames >= plan.after) {
      cancel_sent = true;
      if (co_await client.send_text(R"({"type":"cancel","id":")" + id + "\"}")) {
        t.error("send_failed");
        co_return false;
      }
    }
    net::WsClient::Frame frame = co_await client.read();
    if (frame.ec) {
      t.error("connection_lost");
      co_return false;
    }
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(frame.text, ec);
    if (ec || !v.is_object()) {
      t.error("bad_frame");
      co_return false;
    }
    const auto* frame_id = v.as_object().if_contains("id");
    if (!frame_id || !frame_id->is_string() || frame_id->as_string() != id) {
      t.error("foreign_frame");
      continue;
    }
    ++frames;
    if (loadgen::on_ws_frame(timer, v.as_object(), Clock::now())) break;
  }
  settle(t, timer.record(), cancel_sent);
  co_return true;
}

// Feeds the complete `data:` lines of `pending`; true once the stream ended.
bool feed_events(StreamTimer& timer, std::string& pending, int32_t& events) {
  for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
    std::string_view event(pending.data(), end);
    const bool data = event.starts_with("data: ");
    const bool ended = data && loadgen::on_sse_data(timer, event.substr(6), Clock::now());
    pending.erase(0, end + 2);
    events += data;
    if (ended) return true;
  }
  return false;
}

asio::awaitable<bool> sse_connect(SoakContext& ctx, beast::tcp_stream& stream) {
  boost::system::error_code ec;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(ctx.options.host, ec), ctx.options.port);
  if (ec) co_return false;
  auto [cec] = co_await stream.async_connect(endpoint, tuple_awaitable);
  co_return !cec;
}

asio::awaitable<bool> sse_send(SoakContext& ctx, beast::tcp_stream& stream, const Plan& plan) {
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, ctx.options.host);
  req.set(http::field::content_type, "application/json");
  if (!ctx.options.token.empty()) req.set(http::field::authorization, "Bearer " + ctx.options.token);
  req.keep_alive(false);
  req.body() = request_json(ctx.options, plan, false, "");
  req.prepare_payload();
  auto [ec, n] = co_await http::async_write(stream, req, tuple_awaitable);
  co_return !ec;
}

// One SSE request on a connection of its own, read to [DONE] or dropped.
asio::awaitable<void> sse_request(SoakContext& ctx, const Plan& plan) {
  Tally& t = ctx.sse;
  ++t.requests;
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  if (!co_await sse_connect(ctx, stream)) co_return t.error("connect_failed");
  if (!co_await sse_send(ctx, stream, plan)) co_return t.error("send_failed");
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, tuple_awaitable);
  if (hec) co_return t.error("read_failed");
  if (parser.get().result_int() != 200) co_return t.error("http_" + std::to_string(parser.get().result_int()));
  StreamTimer timer(Clock::now());
  std::string pending;
  int32_t events = 0;
  char chunk[8192];
  while (!timer.ended()) {
    if (plan.fate != Fate::finish && events > plan.after) {
      ++t.disconnected;
      co_return;  // the stream's destructor closes the socket mid-stream
    }
    if (parser.is_done()) co_return t.error("truncated_stream");
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    auto [rec, rn] = co_await http::async_read_some(stream, buffer, parser, tuple_awaitable);
    if (rec && rec != http::error::need_buffer) co_return t.error("read_failed");
    pending.append(chunk, sizeof chunk - parser.get().body().size);
    feed_events(timer, pending, events);
  }
  settle(t, timer.record(), false);
}

}  // namespace

int64_t Tally::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

Plan SoakContext::plan() {
  std::uniform_real_distribution<double> unit(0, 1);
  Plan p;
  const double roll = unit(rng);
  p.fate = roll < options.cancel                        ? Fate::cancel
           : roll < options.cancel + options.disconnect ? Fate::disconnect
                                                        : Fate::finish;
  p.after = std::uniform_int_distribution<int32_t>(0, 3)(rng);
  p.max_tokens = std::uniform_int_distribution<int32_t>(1, std::max(1, options.max_tokens))(rng);
  p.number = next_number++;
  return p;
}

asio::awaitable<void> run_ws_client(SoakContext& ctx, int32_t index) {
  auto executor = co_await asio::this_coro::executor;
  net::WsClient::Options options;
  options.bearer_token = ctx.options.token;
  int64_t n = 0;
  while (!ctx.over()) {
    net::WsClient client(executor);
    if (co_await client.connect(ctx.options.host, ctx.options.port, options)) {
      ctx.ws.error("connect_failed");
      co_await pause(std::chrono::milliseconds(100));
      continue;
    }
    bool open = true;
    while (open && !ctx.over()) {
      const Plan plan = ctx.plan();
      const std::string id = "c" + std::to_string(index) + "-" + std::to_string(n++);
      open = co_await ws_request(ctx, client, plan, id);
    }
    if (open) {
      co_await client.close();
    } else {
      beast::error_code ignored;
      client.stream().next_layer().socket().close(ignored);  // mid-stream: no close handshake
    }
  }
}

asio::awaitable<void> run_sse_client(SoakContext& ctx) {
  while (!ctx.over()) co_await sse_request(ctx, ctx.plan());
}

}  // namespace specd::soak
