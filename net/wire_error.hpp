#pragma once
// The error codes a client sees (the "code" of an error frame or OpenAI error body, the
// label of specd_request_errors_total) and the HTTP status of each: the engine's codes
// (engine/base/errors.hpp) plus the gateway's own refusals of a client's input or
// connection, which the engine never raises. Plain values; any thread.
#include <ostream>  // before Beast 1.81's status.hpp, which uses std::ostream without including it

#include <boost/beast/http/status.hpp>

#include <compare>
#include <variant>

#include "engine/base/errors.hpp"

namespace specd::net {

enum class GatewayCode {
  unknown_type,          // a protocol message of a type the server does not know
  unknown_id,            // cancel of an id neither in flight nor recently finished on this connection
  invalid_utf8,          // a text frame or body that is not valid UTF-8
  binary_frame,          // the protocol is JSON text frames only
  frame_too_large,       // a frame or body above the configured limit
  too_many_requests,     // a connection's in-flight requests at the configured limit
  too_many_connections,  // the server's connections at the configured limit
  unauthorized,          // missing or wrong bearer token
  not_found,             // no such route or file
  origin_not_allowed,    // a CORS preflight from an origin not in server.cors_origins
};

// An engine code or a gateway code; either converts implicitly, so
// `error.code == ErrorCode::bad_value` and `== GatewayCode::not_found` both read naturally.
class WireCode {
 public:
  constexpr WireCode(ErrorCode code) : code_(code) {}
  constexpr WireCode(GatewayCode code) : code_(code) {}

  const ErrorCode* engine_code() const { return std::get_if<ErrorCode>(&code_); }
  const GatewayCode* gateway_code() const { return std::get_if<GatewayCode>(&code_); }

  friend bool operator==(const WireCode&, const WireCode&) = default;
  friend auto operator<=>(const WireCode&, const WireCode&) = default;

 private:
  std::variant<ErrorCode, GatewayCode> code_;
};

// The name clients match on: "bad_value", "overloaded", "unknown_type", ...
const char* wire_name(WireCode code);

// 400 for bad input; 401, 404, 413, 429 for the gateway's refusals and overload; 503
// while stopping or full of connections; 500 when the server failed the request.
boost::beast::http::status http_status_for(WireCode code);

// Whether the server, not the request, is at fault (OpenAI's "server_error" type).
bool server_side(WireCode code);

}  // namespace specd::net
