#include "net/wire_error.hpp"

namespace specd::net {

namespace http = boost::beast::http;

namespace {

const char* gateway_code_name(GatewayCode code) {
  switch (code) {
    case GatewayCode::unknown_type:
      return "unknown_type";
    case GatewayCode::unknown_id:
      return "unknown_id";
    case GatewayCode::invalid_utf8:
      return "invalid_utf8";
    case GatewayCode::binary_frame:
      return "binary_frame";
    case GatewayCode::frame_too_large:
      return "frame_too_large";
    case GatewayCode::too_many_requests:
      return "too_many_requests";
    case GatewayCode::too_many_connections:
      return "too_many_connections";
    case GatewayCode::unauthorized:
      return "unauthorized";
    case GatewayCode::not_found:
      return "not_found";
    case GatewayCode::origin_not_allowed:
      return "origin_not_allowed";
  }
  return "unknown";
}

http::status gateway_status(GatewayCode code) {
  switch (code) {
    case GatewayCode::unauthorized:
      return http::status::unauthorized;
    case GatewayCode::not_found:
      return http::status::not_found;
    case GatewayCode::origin_not_allowed:
      return http::status::forbidden;
    case GatewayCode::frame_too_large:
      return http::status::payload_too_large;
    case GatewayCode::too_many_requests:
      return http::status::too_many_requests;
    case GatewayCode::too_many_connections:
      return http::status::service_unavailable;
    default:
      return http::status::bad_request;
  }
}

http::status engine_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::overloaded:
      return http::status::too_many_requests;
    case ErrorCode::shutting_down:
      return http::status::service_unavailable;
    case ErrorCode::internal:
    case ErrorCode::slow_consumer:
      return http::status::internal_server_error;
    default:
      return http::status::bad_request;
  }
}

}  // namespace

const char* wire_name(WireCode code) {
  if (const ErrorCode* engine = code.engine_code()) return error_code_name(*engine);
  return gateway_code_name(*code.gateway_code());
}

http::status http_status_for(WireCode code) {
  if (const ErrorCode* engine = code.engine_code()) return engine_status(*engine);
  return gateway_status(*code.gateway_code());
}

bool server_side(WireCode code) {
  return code == ErrorCode::internal || code == ErrorCode::overloaded || code == ErrorCode::shutting_down;
}

}  // namespace specd::net
