#include "net/ws_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

#include "actors/asio_aliases.hpp"

namespace specd::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using actors::use_tuple;
using boost::system::error_code;

WsClient::WsClient(asio::any_io_executor executor) : ws_(executor) {}

asio::awaitable<error_code> WsClient::connect(std::string host, uint16_t port) {
  co_return co_await connect(std::move(host), port, Options{});
}

asio::awaitable<error_code> WsClient::connect(std::string host, uint16_t port, Options options) {
  error_code ec;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(host, ec), port);
  if (ec) co_return ec;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  socket.open(endpoint.protocol(), ec);
  if (ec) co_return ec;
  if (options.receive_buffer_bytes > 0) {
    socket.set_option(asio::socket_base::receive_buffer_size(options.receive_buffer_bytes), ec);
  }
  auto [connect_ec] = co_await socket.async_connect(endpoint, use_tuple);
  if (connect_ec) co_return connect_ec;
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  ws_.read_message_max(options.max_frame_bytes);
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
  const std::string token = options.bearer_token;
  ws_.set_option(websocket::stream_base::decorator([token](websocket::request_type& request) {
    if (!token.empty()) request.set(beast::http::field::authorization, "Bearer " + token);
  }));
  websocket::response_type response;
  const std::string host_header = host + ":" + std::to_string(port);
  auto [handshake_ec] = co_await ws_.async_handshake(response, host_header, options.target, use_tuple);
  if (handshake_ec) {
    handshake_status_ = static_cast<int>(response.result_int());
    handshake_body_ = response.body();
  }
  co_return handshake_ec;
}

asio::awaitable<error_code> WsClient::send_text(std::string text) {
  ws_.text(true);
  auto [ec, n] = co_await ws_.async_write(asio::buffer(text), use_tuple);
  co_return ec;
}

asio::awaitable<error_code> WsClient::send_binary(std::string data) {
  ws_.binary(true);
  auto [ec, n] = co_await ws_.async_write(asio::buffer(data), use_tuple);
  ws_.text(true);
  co_return ec;
}

asio::awaitable<WsClient::Frame> WsClient::read() {
  buffer_.clear();
  auto [ec, n] = co_await ws_.async_read(buffer_, use_tuple);
  Frame frame;
  frame.ec = ec;
  if (!ec) {
    frame.text = beast::buffers_to_string(buffer_.data());
    frame.binary = ws_.got_binary();
  }
  co_return frame;
}

asio::awaitable<error_code> WsClient::close() {
  auto [ec] = co_await ws_.async_close(websocket::close_code::normal, use_tuple);
  if (ec) co_return ec;
  for (;;) {
    Frame frame = co_await read();
    if (frame.ec) co_return frame.ec == websocket::error::closed ? error_code{} : frame.ec;
  }
}

}  // namespace specd::net
