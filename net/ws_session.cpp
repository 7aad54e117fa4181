#include "net/ws_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <cstdio>

#include "actors/asio_aliases.hpp"
#include "actors/spawn.hpp"
#include "net/frames.hpp"
#include "net/gateway.hpp"
#include "net/request_timing.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using actors::use_tuple;

namespace {

std::atomic<uint64_t> next_connection{1};

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// Normal ends of a connection, not worth a log line.
bool ordinary_end(const beast::error_code& ec) {
  return ec == websocket::error::closed || ec == asio::error::operation_aborted || ec == asio::error::eof ||
         ec == beast::error::timeout || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == websocket::error::message_too_big || ec == websocket::error::bad_frame_payload;
}

// The frame of a burst, a result (done, or the request's error) or a refusal.
std::string frame_of(const ClientStream::Item& item) {
  if (const auto* burst = std::get_if<Burst>(&item.event)) return tokens_frame(item.id, *burst);
  if (const auto* result = std::get_if<GenerateResult>(&item.event)) {
    if (result->error) return error_frame({result->error->code, result->error->message, item.id});
    return done_frame(item.id, *result);
  }
  return error_frame(std::get<ProtocolError>(item.event));
}

}  // namespace

WsSession::WsSession(std::shared_ptr<Gateway> gateway, beast::tcp_stream stream)
    : gateway_(std::move(gateway)),
      ws_(std::move(stream)),
      strand_(ws_.get_executor()),
      outbound_(std::make_shared<ClientStream>(*gateway_, strand_, Route::websocket,
                                               static_cast<size_t>(gateway_->config().finished_ids_per_connection))),
      number_(next_connection++) {}

asio::awaitable<void> WsSession::run(HttpRequest upgrade) {
  auto self = shared_from_this();
  const GatewayConfig& config = gateway_->config();
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout timeouts{seconds(config.handshake_seconds), seconds(config.ws_idle_seconds), true};
  ws_.set_option(timeouts);
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& response) { response.set(beast::http::field::server, "specd"); }));
  // Frames above max_frame_bytes are read and dropped with an error frame; far larger
  // ones end the connection with 1009 (message too big).
  ws_.read_message_max(config.max_frame_bytes * 16);
  auto [ec] = co_await ws_.async_accept(upgrade, use_tuple);
  if (ec) co_return;
  ws_.text(true);
  gateway_->metrics().connection_opened(true);
  const uint64_t registration = gateway_->register_session(strand_, [weak = std::weak_ptr(outbound_)](auto deadline) {
    if (auto s = weak.lock()) s->shutdown(deadline);
  });
  actors::spawn_logged(
      strand_, [self] { return self->write_loop(); }, "websocket writer");
  co_await read_loop();
  outbound_->close();
  gateway_->unregister_session(registration);
  gateway_->metrics().connection_closed(true);
}

asio::awaitable<void> WsSession::read_loop() {
  for (;;) {
    std::optional<Received> message = co_await read_message();
    if (!message) co_return;
    if (message->refused)
      send_error(std::move(*message->refused));
    else
      handle_message(message->text);
  }
}

asio::awaitable<std::optional<WsSession::Received>> WsSession::read_message() {
  const size_t limit = gateway_->config().max_frame_bytes;
  beast::flat_buffer buffer;
  size_t total = 0;
  do {
    auto [ec, n] = co_await ws_.async_read_some(buffer, 16 * 1024, use_tuple);
    if (ec) {
      if (!ordinary_end(ec))
        std::fprintf(stderr, "specd serve: websocket %llu read: %s\n", static_cast<unsigned long long>(number_),
                     ec.message().c_str());
      co_return std::nullopt;
    }
    total += n;
    if (total > limit) buffer.clear();  // keep reading to the message's end, keep nothing
  } while (!ws_.is_message_done());
  if (total > limit) {
    co_return Received{{},
                       ProtocolError{GatewayCode::frame_too_large,
                                     "a message of " + std::to_string(total) + " bytes exceeds max_frame_bytes " +
                                         std::to_string(limit),
                                     std::nullopt}};
  }
  if (ws_.got_binary()) {
    co_return Received{{}, ProtocolError{GatewayCode::binary_frame, "send JSON in text frames", std::nullopt}};
  }
  co_return Received{beast::buffers_to_string(buffer.data()), std::nullopt};
}

asio::awaitable<void> WsSession::write_loop() {
  for (;;) {
    std::optional<ClientStream::Item> item = co_await outbound_->next();
    if (!item) co_return;
    if (std::holds_alternative<ClientStream::Close>(item->event)) {
      websocket::close_reason reason(websocket::close_code::service_restart, "server shutting down");
      auto [ec] = co_await ws_.async_close(reason, use_tuple);
      co_return;
    }
    const std::string frame = frame_of(*item);
    auto [ec, n] = co_await ws_.async_write(asio::buffer(frame), use_tuple);
    if (ec) {
      // The reader learns of it when its socket closes.
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().close(ignored);
      co_return;
    }
    if (auto* burst = std::get_if<Burst>(&item->event); burst && burst->on_written) burst->on_written();
  }
}

void WsSession::handle_message(const std::string& text) {
  ClientMessage message = parse_client_message(text, gateway_->config().protocol);
  if (auto* error = std::get_if<ProtocolError>(&message))
    send_error(std::move(*error));
  else if (auto* generate = std::get_if<GenerateParams>(&message))
    start_generate(std::move(*generate));
  else
    cancel_request(std::get<CancelMessage>(message).id);
}

void WsSession::send_error(ProtocolError error) {
  gateway_->metrics().request_error(Route::websocket, error.code);
  if (outbound_->reply(std::move(error))) return;
  // A client that sends without reading is cut off rather than buffered without end.
  outbound_->close();
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

void WsSession::start_generate(GenerateParams p) {
  const GatewayConfig& config = gateway_->config();
  const std::string id = p.request.id;  // the client's; the engine's is unique across connections
  if (auto refused = refusal_while_stopping(*gateway_, id)) return send_error(std::move(*refused));
  if (outbound_->in_flight(id))
    return send_error({ErrorCode::duplicate_id, "request id '" + id + "' is already in flight", id});
  if (outbound_->in_flight_count() >= static_cast<size_t>(config.max_requests_per_connection)) {
    return send_error(
        {GatewayCode::too_many_requests,
         "at most " + std::to_string(config.max_requests_per_connection) + " requests in flight per connection", id});
  }
  GenerateRequest request = std::move(p.request);
  request.id = "ws" + std::to_string(number_) + ":" + id;
  outbound_->submit(id, std::move(request), true);
}

void WsSession::cancel_request(const std::string& id) {
  // A request that ended before the cancel arrived is known: its done or error frame is the answer.
  if (outbound_->cancel(id)) return;
  send_error(
      {GatewayCode::unknown_id, "no request '" + id + "' in flight or recently finished on this connection", id});
}

}  // namespace specd::net
