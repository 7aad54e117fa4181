#pragma once
// One HTTP connection: reads requests (keep-alive) and routes them: POST
// /v1/completions and /v1/chat/completions (OpenAI wire format, SSE when stream is
// true), POST /tokenize, /detokenize, /apply-template, GET /v1/models, /health, /metrics,
// /v1/trace, static files under the web root, CORS preflights (net/cors.hpp), and the
// WebSocket upgrade of /v1/ws (handed to a WsSession). Every route checks the bearer
// token when one is configured. Lives on its socket's strand.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "actors/engine.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

class ClientStream;
class Gateway;
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `refused`: over the connection limit; answer one request with 503 too_many_connections.
  HttpSession(std::shared_ptr<Gateway> gateway, boost::asio::ip::tcp::socket socket, bool refused);
  boost::asio::awaitable<void> run();

 private:
  boost::asio::awaitable<void> serve_requests();
  boost::asio::awaitable<bool> route(HttpRequest& request);
  boost::asio::awaitable<bool> send_error(const HttpRequest& request, WireCode code, std::string message);
  boost::asio::awaitable<bool> send_text(const HttpRequest& request, std::string body, const char* content_type);
  boost::asio::awaitable<bool> send_health(const HttpRequest& request);
  boost::asio::awaitable<bool> send_preflight(const HttpRequest& request);
  boost::asio::awaitable<bool> send_file(const HttpRequest& request);
  boost::asio::awaitable<bool> send_metrics(const HttpRequest& request);
  boost::asio::awaitable<bool> send_trace(const HttpRequest& request);
  boost::asio::awaitable<void> upgrade(HttpRequest request);
  bool authorized(const HttpRequest& request) const;
  void on_shutdown(std::chrono::steady_clock::time_point deadline);

  std::shared_ptr<Gateway> gateway_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool refused_;
  bool idle_ = true;                // waiting for a request (a shutdown closes it, once one was served)
  bool served_ = false;             // answered a request: a keep-alive wait a shutdown may cut
  bool stopping_ = false;           // the server stops: no keep-alive after this request
  ClientStream* active_ = nullptr;  // the generation being served, told of a shutdown
  uint64_t registration_ = 0;       // with the gateway's shutdown registry
  std::string allow_origin_;        // the request's Access-Control-Allow-Origin; empty: none
};

}  // namespace specd::net
