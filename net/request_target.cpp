#include "net/request_target.hpp"

namespace specd::net {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

std::optional<std::string> percent_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+' && plus_is_space) {
      out += ' ';
      continue;
    }
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::optional<std::string> query_value(std::string_view target, std::string_view name, bool* bad_escape) {
  if (bad_escape) *bad_escape = false;
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name && pair[name.size()] == '=') {
      auto value = percent_decode(pair.substr(name.size() + 1), true);
      if (!value && bad_escape) *bad_escape = true;
      return value;
    }
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
  }
  return std::nullopt;
}

}  // namespace specd::net
