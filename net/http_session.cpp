#include "net/http_session.hpp"

#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdio>
#include <ctime>

#include "actors/asio_aliases.hpp"
#include "json/json_serialize.hpp"
#include "net/client_stream.hpp"
#include "net/cors.hpp"
#include "net/frames.hpp"
#include "net/gateway.hpp"
#include "net/openai_stream.hpp"
#include "net/request_target.hpp"
#include "net/static_files.hpp"
#include "net/trace_query.hpp"
#include "net/utility_routes.hpp"
#include "net/wire_error.hpp"
#include "net/ws_session.hpp"

namespace specd::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using actors::use_tuple;

namespace {

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

HttpSession::HttpSession(std::shared_ptr<Gateway> gateway, asio::ip::tcp::socket socket, bool refused)
    : gateway_(std::move(gateway)), stream_(std::move(socket)), refused_(refused) {}

asio::awaitable<void> HttpSession::run() {
  auto self = shared_from_this();
  Metrics& metrics = gateway_->metrics();
  metrics.connection_opened(false);
  registration_ = gateway_->register_session(stream_.get_executor(), [weak = weak_from_this()](auto deadline) {
    if (auto s = weak.lock()) s->on_shutdown(deadline);
  });
  co_await serve_requests();
  if (registration_) gateway_->unregister_session(registration_);
  metrics.connection_closed(false);
}

asio::awaitable<void> HttpSession::serve_requests() {
  const auto& config = gateway_->config();
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(config.max_body_bytes);
    parser.header_limit(static_cast<uint32_t>(config.max_header_bytes));
    idle_ = true;
    // A connection opened while the server drains gets its one answer (503) promptly or none.
    const bool brief = refused_ || gateway_->stopping();
    stream_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(brief ? 2.0 : config.http_idle_seconds)));
    auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
    idle_ = false;
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      HttpRequest head = parser.get();
      head.keep_alive(false);
      co_await send_error(
          head, GatewayCode::frame_too_large,
          ec == http::error::body_limit ? "the body exceeds max_body_bytes" : "the header exceeds max_header_bytes");
      break;
    }
    if (ec) break;  // closed, timed out, cancelled by a shutdown, or not HTTP
    HttpRequest request = parser.release();
    if (refused_) {
      request.keep_alive(false);
      co_await send_error(request, GatewayCode::too_many_connections, "the server is at its connection limit");
      break;
    }
    if (beast::websocket::is_upgrade(request) && authorized(request) && path_of(request.target()) == "/v1/ws") {
      co_await upgrade(std::move(request));
      co_return;
    }
    // Draining: this is the connection's last answer, and it says so (Connection: close).
    if (gateway_->stopping()) request.keep_alive(false);
    const bool keep_alive = co_await route(request);
    served_ = true;
    if (!keep_alive || stopping_) break;
  }
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

bool HttpSession::authorized(const HttpRequest& request) const {
  const std::string& token = gateway_->config().auth_token;
  if (token.empty()) return true;
  std::string_view header = request[http::field::authorization];
  if (header.size() > 7 && header.substr(0, 7) == "Bearer ") return equal_constant_time(header.substr(7), token);
  // Browsers cannot set headers on a WebSocket handshake: ?access_token= there.
  if (beast::websocket::is_upgrade(request))
    return equal_constant_time(query_value(request.target(), "access_token").value_or(""), token);
  return false;
}

asio::awaitable<bool> HttpSession::route(HttpRequest& request) {
  const std::string_view path = path_of(request.target());
  allow_origin_ = cors_allow_origin(gateway_->config().cors_origins, request[http::field::origin]);
  // A browser's preflight carries no credentials: it is answered before the token check.
  if (request.method() == http::verb::options) co_return co_await send_preflight(request);
  // The token guards the API and the server's state. The static pages (web_root) hold
  // no data and a browser cannot send a header when it opens them: the chat page, opened
  // as /?access_token=T, passes T on to its WebSocket handshake.
  const bool api = path.starts_with("/v1/") || path == "/health" || path == "/metrics" || path == "/tokenize" ||
                   path == "/detokenize" || path == "/apply-template";
  if (api && !authorized(request)) {
    co_return co_await send_error(request, GatewayCode::unauthorized, "missing or wrong bearer token");
  }
  const auto method = request.method();
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (method != http::verb::post) co_return co_await send_error(request, ErrorCode::bad_value, "use POST");
    if (auto refused = refusal_while_stopping(*gateway_))
      co_return co_await send_error(request, refused->code, std::move(refused->message));
    const OpenAiRoute r = path == "/v1/completions" ? OpenAiRoute::completions : OpenAiRoute::chat_completions;
    GenerationContext context{stream_, *gateway_, active_, allow_origin_};
    co_return co_await serve_openai(context, request, r);
  }
  if (path == "/tokenize" || path == "/detokenize" || path == "/apply-template") {
    if (method != http::verb::post) co_return co_await send_error(request, ErrorCode::bad_value, "use POST");
    const Engine& engine = gateway_->engine();
    const ProtocolLimits& limits = gateway_->config().protocol;
    const RouteReply reply = path == "/tokenize"     ? tokenize_reply(engine, request.body(), limits)
                             : path == "/detokenize" ? detokenize_reply(engine, request.body())
                                                     : apply_template_reply(engine, request.body(), limits);
    co_return co_await write_json_response(stream_, request, reply.status, reply.body, allow_origin_);
  }
  if (method != http::verb::get && method != http::verb::head) {
    co_return co_await send_error(request, GatewayCode::not_found, "no route for this method and path");
  }
  if (path == "/health") co_return co_await send_health(request);
  if (path == "/v1/models")
    co_return co_await send_text(request, models_body(gateway_->config().model_name, gateway_->engine()),
                                 "application/json");
  if (path == "/metrics") co_return co_await send_metrics(request);
  if (path == "/v1/trace") co_return co_await send_trace(request);
  if (path == "/v1/ws")
    co_return co_await send_error(request, ErrorCode::bad_value, "/v1/ws takes WebSocket upgrades only");
  co_return co_await send_file(request);
}

asio::awaitable<bool> HttpSession::send_error(const HttpRequest& request, WireCode code, std::string message) {
  co_return co_await write_json_response(stream_, request, http_status_for(code), openai_error_body(code, message),
                                         allow_origin_);
}

// CORS preflight: 204 with the Access-Control-* headers for an allowed origin; 403
// origin_not_allowed otherwise (with CORS off, for every origin).
asio::awaitable<bool> HttpSession::send_preflight(const HttpRequest& request) {
  if (allow_origin_.empty()) {
    const std::string origin(request[http::field::origin]);
    co_return co_await send_error(request, GatewayCode::origin_not_allowed,
                                  origin.empty() ? "OPTIONS is answered only to CORS preflights (no Origin header)"
                                                 : "origin " + origin + " is not in server.cors_origins");
  }
  http::response<http::empty_body> response{http::status::no_content, request.version()};
  response.set(http::field::server, "specd");
  set_preflight_headers(response.base(), allow_origin_, request[http::field::access_control_request_headers]);
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
  co_return !ec && request.keep_alive();
}

asio::awaitable<bool> HttpSession::send_text(const HttpRequest& request, std::string body, const char* content_type) {
  http::response<http::string_body> response{http::status::ok, request.version()};
  response.set(http::field::server, "specd");
  response.set(http::field::content_type, content_type);
  set_cors_headers(response.base(), allow_origin_);
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  if (request.method() == http::verb::head) response.body().clear();
  auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
  co_return !ec && request.keep_alive();
}

// Readiness: 200 ok while serving; 503 draining from SIGTERM on, so that a load balancer
// or a readiness probe sends new work elsewhere while the streams in flight finish.
asio::awaitable<bool> HttpSession::send_health(const HttpRequest& request) {
  if (!gateway_->stopping())
    co_return co_await send_text(request, serialize_json(boost::json::object{{"status", "ok"}}), "application/json");
  co_return co_await write_json_response(stream_, request, http::status::service_unavailable,
                                         serialize_json(boost::json::object{{"status", "draining"}}), allow_origin_);
}

asio::awaitable<bool> HttpSession::send_metrics(const HttpRequest& request) {
  EngineSnapshot snapshot;
  if (!gateway_->stopping()) snapshot = co_await gateway_->engine().snapshot();
  std::string body = gateway_->metrics().render(snapshot);
  co_return co_await send_text(request, std::move(body), "text/plain; version=0.0.4; charset=utf-8");
}

asio::awaitable<bool> HttpSession::send_trace(const HttpRequest& request) {
  if (!gateway_->engine().config().trace) {
    co_return co_await send_error(request, GatewayCode::not_found,
                                  "this server records no trace ([trace] enabled = false)");
  }
  const TraceQuery query = parse_trace_query(request.target());
  if (query.error) co_return co_await send_error(request, ErrorCode::bad_value, *query.error);
  co_return co_await send_text(request, gateway_->engine().trace_json(query.seconds, query.request_id),
                               "application/json");
}

asio::awaitable<bool> HttpSession::send_file(const HttpRequest& request) {
  auto file = resolve_static_path(gateway_->config().web_root, path_of(request.target()));
  if (!file) co_return co_await send_error(request, ErrorCode::bad_value, "bad path");
  http::file_body::value_type body;
  beast::error_code ec;
  body.open(file->c_str(), beast::file_mode::scan, ec);
  if (ec)
    co_return co_await send_error(request, GatewayCode::not_found,
                                  "no such file: " + std::string(path_of(request.target())));
  http::response<http::file_body> response{http::status::ok, request.version()};
  response.set(http::field::server, "specd");
  response.set(http::field::content_type, content_type_for(*file));
  set_cors_headers(response.base(), allow_origin_);
  response.keep_alive(request.keep_alive());
  const auto size = body.size();
  if (request.method() != http::verb::head) response.body() = std::move(body);
  response.content_length(size);
  auto [wec, n] = co_await http::async_write(stream_, response, use_tuple);
  co_return !wec && request.keep_alive();
}

asio::awaitable<void> HttpSession::upgrade(HttpRequest request) {
  if (auto refused = refusal_while_stopping(*gateway_)) {
    request.keep_alive(false);  // the connection closes after this answer
    co_await send_error(request, refused->code, std::move(refused->message));
    co_return;
  }
  // From here the WebSocket session answers the shutdown notice.
  gateway_->unregister_session(registration_);
  registration_ = 0;
  auto session = std::make_shared<WsSession>(gateway_, std::move(stream_));
  co_await session->run(std::move(request));
}

void HttpSession::on_shutdown(std::chrono::steady_clock::time_point deadline) {
  // A notice posted just before upgrade() unregistered: the WebSocket session owns the
  // stream now (stream_ is moved from) and answers its own notice.
  if (registration_ == 0) return;
  stopping_ = true;
  // A keep-alive wait ends now; a connection that has not sent its request yet (opened
  // while draining) gets its answer first.
  if (idle_ && served_) {
    stream_.cancel();
    return;
  }
  // A generation in progress may finish until the deadline (its stream decides).
  if (active_) active_->shutdown(deadline);
}

}  // namespace specd::net
