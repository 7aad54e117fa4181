#pragma once
// What GET /v1/trace asks for: `seconds` (the window, default 10, at most an hour) and
// `request` (one request's id). Pure function; any thread.
#include <optional>
#include <string>
#include <string_view>

namespace specd::net {

struct TraceQuery {
  double seconds = 10;
  std::optional<std::string> request_id;
  std::optional<std::string> error;  // a bad parameter, for a 400 bad_value
};

TraceQuery parse_trace_query(std::string_view target);

}  // namespace specd::net
