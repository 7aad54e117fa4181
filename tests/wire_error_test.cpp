// The codes clients see (net/wire_error): every name and HTTP status, which clients
// and the tests in tests/python, tests/openai_client and tests/loadgen match on.
#include <doctest/doctest.h>

#include <string>

#include "net/wire_error.hpp"

using namespace specd;
using namespace specd::net;
using boost::beast::http::status;

TEST_CASE("the gateway's own codes keep their wire names and HTTP statuses") {
  const struct {
    GatewayCode code;
    const char* name;
    status http;
  } expected[] = {
      {GatewayCode::unknown_type, "unknown_type", status::bad_request},
      {GatewayCode::unknown_id, "unknown_id", status::bad_request},
      {GatewayCode::invalid_utf8, "invalid_utf8", status::bad_request},
      {GatewayCode::binary_frame, "binary_frame", status::bad_request},
      {GatewayCode::frame_too_large, "frame_too_large", status::payload_too_large},
      {GatewayCode::too_many_requests, "too_many_requests", status::too_many_requests},
      {GatewayCode::too_many_connections, "too_many_connections", status::service_unavailable},
      {GatewayCode::unauthorized, "unauthorized", status::unauthorized},
      {GatewayCode::not_found, "not_found", status::not_found},
      {GatewayCode::origin_not_allowed, "origin_not_allowed", status::forbidden},
  };
  for (const auto& e : expected) {
    CAPTURE(e.name);
    CHECK(std::string(wire_name(e.code)) == e.name);
    CHECK(http_status_for(e.code) == e.http);
    CHECK_FALSE(server_side(e.code));
  }
}

TEST_CASE("engine codes go out under the engine's names; overload, stopping and failures are the server's") {
  CHECK(std::string(wire_name(ErrorCode::bad_value)) == "bad_value");
  CHECK(std::string(wire_name(ErrorCode::duplicate_id)) == "duplicate_id");
  CHECK(std::string(wire_name(ErrorCode::malformed_toml)) == "malformed_toml");
  CHECK(http_status_for(ErrorCode::bad_value) == status::bad_request);
  CHECK(http_status_for(ErrorCode::invalid_argument) == status::bad_request);
  CHECK(http_status_for(ErrorCode::overloaded) == status::too_many_requests);
  CHECK(http_status_for(ErrorCode::shutting_down) == status::service_unavailable);
  CHECK(http_status_for(ErrorCode::internal) == status::internal_server_error);
  CHECK(http_status_for(ErrorCode::slow_consumer) == status::internal_server_error);
  CHECK(server_side(ErrorCode::overloaded));
  CHECK(server_side(ErrorCode::shutting_down));
  CHECK(server_side(ErrorCode::internal));
  CHECK_FALSE(server_side(ErrorCode::bad_value));
}

TEST_CASE("an engine code and a gateway code never compare equal, and order for metric maps") {
  const WireCode engine = ErrorCode::missing_file;  // the first of each enum: both 0
  const WireCode gateway = GatewayCode::unknown_type;
  CHECK_FALSE(engine == gateway);
  CHECK(engine == ErrorCode::missing_file);
  CHECK(gateway == GatewayCode::unknown_type);
  CHECK((engine < gateway) != (gateway < engine));
}
