#pragma once
// Cross-origin access for browser apps on another origin ([server] cors_origins,
// --cors-origins; off when the list is empty): which origins may call the API, the
// answer to a preflight (OPTIONS with Access-Control-Request-Method), and the
// Access-Control-Allow-Origin header of every other response. Pure functions; any thread.
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace specd::net {

// The Access-Control-Allow-Origin value for a request from `origin` (its Origin
// header): "*" when the list holds "*", the origin itself when listed (compared
// without case, as browsers send scheme and host in lower case), otherwise "" (no
// CORS headers: the browser keeps the response from the page).
std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin);

// Whether a configured entry is usable: "*", or scheme://host[:port] with http or https
// and no path. Returns the reason when it is not, "" when it is.
std::string cors_origin_problem(std::string_view entry);

// Sets Access-Control-Allow-Origin (and Vary: Origin, since the answer depends on it)
// when `allow_origin` is not empty.
void set_cors_headers(boost::beast::http::fields& headers, std::string_view allow_origin);

// A preflight's extra headers: the methods the API takes, the headers the request
// asked for (Authorization and Content-Type when it named none), and how long the
// browser may cache the answer.
void set_preflight_headers(boost::beast::http::fields& headers, std::string_view allow_origin,
                           std::string_view requested_headers);

}  // namespace specd::net
