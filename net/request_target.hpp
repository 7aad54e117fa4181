#pragma once
// The parts of an HTTP request target ("/path?name=value&..."): the path, and query
// values with their percent escapes decoded. Pure functions; any thread.
#include <optional>
#include <string>
#include <string_view>

namespace specd::net {

std::string_view path_of(std::string_view target);

// `in` with %XX escapes (and '+' in a query, as forms send a space) decoded; nullopt
// for a truncated or non-hex escape.
std::optional<std::string> percent_decode(std::string_view in, bool plus_is_space = false);

// The decoded value of the first `name=` in the query: nullopt when absent, and also
// when its escape is bad (`bad_escape` set).
std::optional<std::string> query_value(std::string_view target, std::string_view name, bool* bad_escape = nullptr);

}  // namespace specd::net
