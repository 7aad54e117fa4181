#include "net/trace_query.hpp"

#include <charconv>

#include "net/request_target.hpp"

namespace specd::net {

namespace {

constexpr double kMaxWindowSeconds = 3600;

}  // namespace

TraceQuery parse_trace_query(std::string_view target) {
  TraceQuery q;
  bool bad_escape = false;
  if (auto seconds = query_value(target, "seconds", &bad_escape)) {
    double value = 0;
    const char* end = seconds->data() + seconds->size();
    const auto [ptr, ec] = std::from_chars(seconds->data(), end, value);
    if (ec != std::errc{} || ptr != end || !(value > 0 && value <= kMaxWindowSeconds)) {
      q.error = "seconds must be a number in (0, 3600], got '" + *seconds + "'";
      return q;
    }
    q.seconds = value;
  }
  if (!bad_escape) q.request_id = query_value(target, "request", &bad_escape);
  if (bad_escape) q.error = "a query parameter has a bad percent escape";
  if (q.request_id && q.request_id->empty()) q.error = "request must name a request id";
  return q;
}

}  // namespace specd::net
