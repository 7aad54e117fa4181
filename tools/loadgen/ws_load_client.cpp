#include "tools/loadgen/ws_load_client.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json.hpp>

#include <optional>
#include <string>

#include "net/ws_client.hpp"
#include "tools/loadgen/client_requests.hpp"

namespace specd::loadgen {

namespace asio = boost::asio;
namespace websocket = boost::beast::websocket;

namespace {

// A request a draining server refused before starting it is resent on a new
// connection (through a proxy, to another replica) at most this often.
constexpr int32_t kMaxRetries = 3;

enum class Outcome {
  ended,    // done or error frame: the connection goes on
  lost,     // the connection broke: the next request reconnects
  refused,  // the server is draining and did not start it: resend on a new connection
};

// Reads frames of request `id` until it ends.
asio::awaitable<Outcome> read_stream(LevelContext& ctx, net::WsClient& client, const std::string& id,
                                     StreamTimer& timer) {
  for (;;) {
    net::WsClient::Frame frame = co_await client.read();
    const auto at = Clock::now();
    if (frame.ec) {
      // Closed with 1012 (service restart) before any token: the server never ran it.
      const bool restarting =
          frame.ec == websocket::error::closed && client.close_reason().code == websocket::close_code::service_restart;
      if (restarting && timer.record().bursts == 0 && !ctx.timed_out) co_return Outcome::refused;
      timer.fail(at, ctx.timed_out ? "timeout" : "disconnected");
      co_return Outcome::lost;
    }
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(frame.text, ec);
    if (ec || !v.is_object()) {
      timer.fail(at, "bad_frame");
      co_return Outcome::ended;
    }
    const auto& o = v.as_object();
    const auto* frame_id = o.if_contains("id");
    // Frames of other requests cannot come (one in flight per connection); an error
    // without an id (a refused frame) is this request's.
    if (frame_id && frame_id->is_string() && frame_id->as_string() != id) continue;
    if (!on_ws_frame(timer, o, at)) continue;
    if (timer.record().error == "shutting_down" && timer.record().bursts == 0) co_return Outcome::refused;
    co_return Outcome::ended;
  }
}

std::string connect_error(const net::WsClient& client, bool timed_out) {
  if (timed_out) return "timeout";
  return client.handshake_status() ? "http_" + std::to_string(client.handshake_status()) : "connect_failed";
}

}  // namespace

asio::awaitable<void> run_ws_client(LevelContext& ctx, int32_t client_index) {
  auto executor = co_await asio::this_coro::executor;
  std::optional<net::WsClient> client;  // a fresh one after a lost connection
  const auto index = static_cast<size_t>(client_index);
  ctx.closers[index] = [&client] {
    if (client) client->stream().next_layer().close();
  };
  net::WsClient::Options options;
  options.bearer_token = ctx.options.token;
  options.target = ws_target(ctx.options, client_index);
  ClientRequests requests(ctx.options);
  for (int32_t i = 0; i < requests.count(); ++i) {
    if (ctx.timed_out) {
      ctx.unsent(requests.count() - i, "timeout", requests.next_turn());
      break;
    }
    const int64_t number = ctx.take_request_number();
    const std::string id = "lg" + std::to_string(number);
    const auto sent = Clock::now();
    StreamTimer timer(sent);
    bool started = false;
    for (int32_t attempt = 0;; ++attempt) {
      if (!client) {
        client.emplace(executor);
        const boost::system::error_code connect_ec =
            co_await client->connect(ctx.options.host, ctx.options.port, options);
        if (connect_ec) {
          timer.fail(Clock::now(), connect_error(*client, ctx.timed_out));
          client.reset();
          break;
        }
      }
      if (!started) ctx.stream_started();
      started = true;
      timer = StreamTimer(sent);
      timer.record().retries = attempt;
      Outcome outcome = Outcome::lost;
      if (co_await client->send_text(requests.next(id, number))) {
        timer.fail(Clock::now(), ctx.timed_out ? "timeout" : "send_failed");
      } else {
        outcome = co_await read_stream(ctx, *client, id, timer);
      }
      if (outcome != Outcome::ended) client.reset();
      if (outcome != Outcome::refused) break;
      if (attempt == kMaxRetries) {
        timer.fail(Clock::now(), "shutting_down");
        break;
      }
    }
    if (!started) {
      // Refused at the handshake (or no server): this request and the rest go unsent.
      ctx.unsent(requests.count() - i, *timer.record().error, requests.next_turn());
      break;
    }
    const bool goes_on = requests.ended(timer.record());
    ctx.stream_ended(std::move(timer.record()));
    if (!goes_on) {
      ctx.unsent(requests.count() - i - 1, "previous_turn_failed", requests.next_turn());
      break;
    }
  }
  ctx.closers[index] = nullptr;
  if (client && !ctx.timed_out) {
    const boost::system::error_code close_ec = co_await client->close();
    (void)close_ec;  // the server may already have gone; nothing left to measure
  }
}

}  // namespace specd::loadgen
