#include "net/cors.hpp"

#include <algorithm>
#include <cctype>

namespace specd::net {

namespace http = boost::beast::http;

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin) {
  if (origin.empty()) return "";
  for (const std::string& entry : allowed) {
    if (entry == "*") return "*";
    if (equal_ignoring_case(entry, origin)) return std::string(origin);
  }
  return "";
}

std::string cors_origin_problem(std::string_view entry) {
  if (entry == "*") return "";
  std::string_view rest;
  if (entry.starts_with("http://"))
    rest = entry.substr(7);
  else if (entry.starts_with("https://"))
    rest = entry.substr(8);
  else
    return "must be \"*\" or start with http:// or https://";
  if (rest.empty()) return "has no host";
  if (rest.find_first_of("/?#") != std::string_view::npos)
    return "must be scheme://host[:port] without a path (as a browser's Origin header)";
  return "";
}

void set_cors_headers(http::fields& headers, std::string_view allow_origin) {
  if (allow_origin.empty()) return;
  headers.set(http::field::access_control_allow_origin, allow_origin);
  if (allow_origin != "*") headers.set(http::field::vary, "Origin");
}

void set_preflight_headers(http::fields& headers, std::string_view allow_origin, std::string_view requested_headers) {
  set_cors_headers(headers, allow_origin);
  headers.set(http::field::access_control_allow_methods, "GET, POST, OPTIONS");
  headers.set(http::field::access_control_allow_headers,
              requested_headers.empty() ? std::string_view("Authorization, Content-Type") : requested_headers);
  headers.set(http::field::access_control_max_age, "600");
}

}  // namespace specd::net
