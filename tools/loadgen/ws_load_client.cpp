#include "tools/loadgen/ws_load_client.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>

#include <string>

#include "net/ws_client.hpp"
#include "tools/loadgen/client_requests.hpp"

namespace specd::loadgen {

namespace asio = boost::asio;

namespace {

// Reads frames of request `id` until it ends; false when the connection is unusable.
asio::awaitable<bool> read_stream(LevelContext& ctx, net::WsClient& client, const std::string& id, StreamTimer& timer) {
  for (;;) {
    net::WsClient::Frame frame = co_await client.read();
    const auto at = Clock::now();
    if (frame.ec) {
      timer.fail(at, ctx.timed_out ? "timeout" : "disconnected");
      co_return false;
    }
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(frame.text, ec);
    if (ec || !v.is_object()) {
      timer.fail(at, "bad_frame");
      co_return true;
    }
    const auto& o = v.as_object();
    const auto* frame_id = o.if_contains("id");
    // Frames of other requests cannot come (one in flight per connection); an error
    // without an id (a refused frame) is this request's.
    if (frame_id && frame_id->is_string() && frame_id->as_string() != id) continue;
    if (on_ws_frame(timer, o, at)) co_return true;
  }
}

std::string connect_error(const net::WsClient& client, bool timed_out) {
  if (timed_out) return "timeout";
  return client.handshake_status() ? "http_" + std::to_string(client.handshake_status()) : "connect_failed";
}

}  // namespace

asio::awaitable<void> run_ws_client(LevelContext& ctx, int32_t client_index) {
  auto executor = co_await asio::this_coro::executor;
  net::WsClient client(executor);
  const auto index = static_cast<size_t>(client_index);
  ctx.closers[index] = [&client] { client.stream().next_layer().close(); };
  const std::string host = ctx.options.host;
  net::WsClient::Options options;
  options.bearer_token = ctx.options.token;
  ClientRequests requests(ctx.options);
  const boost::system::error_code connect_ec = co_await client.connect(host, ctx.options.port, options);
  if (connect_ec) {
    ctx.closers[index] = nullptr;
    ctx.unsent(requests.count(), connect_error(client, ctx.timed_out), requests.next_turn());
    co_return;
  }
  bool usable = true;
  for (int32_t i = 0; i < requests.count(); ++i) {
    if (ctx.timed_out || !usable) {
      ctx.unsent(requests.count() - i, ctx.timed_out ? "timeout" : "disconnected", requests.next_turn());
      break;
    }
    const int64_t number = ctx.take_request_number();
    const std::string id = "lg" + std::to_string(number);
    std::string request = requests.next(id, number);
    StreamTimer timer(Clock::now());
    ctx.stream_started();
    const boost::system::error_code send_ec = co_await client.send_text(std::move(request));
    if (send_ec) {
      timer.fail(Clock::now(), ctx.timed_out ? "timeout" : "send_failed");
      usable = false;
    } else {
      usable = co_await read_stream(ctx, client, id, timer);
    }
    const bool goes_on = requests.ended(timer.record());
    ctx.stream_ended(std::move(timer.record()));
    if (!goes_on) {
      ctx.unsent(requests.count() - i - 1, "previous_turn_failed", requests.next_turn());
      break;
    }
  }
  ctx.closers[index] = nullptr;
  if (usable && !ctx.timed_out) {
    const boost::system::error_code close_ec = co_await client.close();
    (void)close_ec;  // the server may already have gone; nothing left to measure
  }
}

}  // namespace specd::loadgen
