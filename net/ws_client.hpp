#pragma once
// A small coroutine WebSocket client for specd's /v1/ws (tests, tools/loadgen, and
// the gateway benchmark). One object, one connection. Not thread-safe: use it from one
// strand; at most one read and one send may be pending at a time (Beast's rule), so a
// reader coroutine and a sender coroutine may run side by side.
//
//   net::WsClient client(co_await asio::this_coro::executor);
//   if (auto ec = co_await client.connect("127.0.0.1", port)) { ... client.handshake_status() ... }
//   co_await client.send_text(R"({"type":"generate","id":"r1","prompt":"ROMEO:","max_tokens":8})");
//   for (;;) {
//     net::WsClient::Frame frame = co_await client.read();   // one whole message
//     if (frame.ec) break;                                   // closed: see close_reason()
//     ... parse frame.text (tokens / done / error) ...
//   }
//   co_await client.close();
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace specd::net {

class WsClient {
 public:
  struct Options {
    std::string target = "/v1/ws";
    std::string bearer_token;      // sent as "Authorization: Bearer ..." when not empty
    int receive_buffer_bytes = 0;  // SO_RCVBUF before connecting (tests of slow clients); 0: default
    size_t max_frame_bytes = 16 * 1024 * 1024;
  };
  struct Frame {
    boost::system::error_code ec;  // websocket::error::closed after a close frame
    std::string text;
    bool binary = false;
  };

  explicit WsClient(boost::asio::any_io_executor executor);

  // TCP connect and WebSocket handshake. On a refused handshake (401, 503, ...), the
  // error is set and handshake_status()/handshake_body() tell why.
  boost::asio::awaitable<boost::system::error_code> connect(std::string host, uint16_t port, Options options);
  boost::asio::awaitable<boost::system::error_code> connect(std::string host, uint16_t port);
  int handshake_status() const { return handshake_status_; }
  const std::string& handshake_body() const { return handshake_body_; }

  boost::asio::awaitable<boost::system::error_code> send_text(std::string text);
  boost::asio::awaitable<boost::system::error_code> send_binary(std::string data);
  // The next whole message.
  boost::asio::awaitable<Frame> read();
  // Sends a close frame and reads until the server's close arrives.
  boost::asio::awaitable<boost::system::error_code> close();
  // The server's close frame (code 1012 on a server shutdown), once read() reported closed.
  boost::beast::websocket::close_reason close_reason() const { return ws_.reason(); }

  boost::beast::websocket::stream<boost::beast::tcp_stream>& stream() { return ws_; }

 private:
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  int handshake_status_ = 0;
  std::string handshake_body_;
};

}  // namespace specd::net
