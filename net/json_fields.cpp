#include "net/json_fields.hpp"

#include <climits>
#include <cmath>

#include "net/protocol.hpp"

namespace specd::net::json_fields {

void refuse(WireCode code, std::string message) { throw Refusal{code, std::move(message)}; }

std::string utf8_prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::optional<element> member(const object& o, std::string_view name) {
  element e;
  if (o.at_key(name).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

std::string as_string(element e, std::string_view name) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, std::string(name) + " must be a string");
  return std::string(s);
}

bool as_bool(element e, std::string_view name) {
  bool b = false;
  if (e.get_bool().get(b) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, std::string(name) + " must be true or false");
  return b;
}

int64_t as_integer(element e, std::string_view name, int64_t lo, int64_t hi) {
  const std::string range = " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (e.type() == element_type::UINT64) refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range);
  int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS)
    refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range);
  if (v < lo || v > hi)
    refuse(ErrorCode::bad_value, std::string(name) + " must be an integer" + range + ", got " + std::to_string(v));
  return v;
}

double as_number(element e, std::string_view name) {
  double v = 0;
  switch (e.type()) {
    case element_type::INT64:
      v = static_cast<double>(int64_t(e));
      break;
    case element_type::UINT64:
      v = static_cast<double>(uint64_t(e));
      break;
    case element_type::DOUBLE:
      v = double(e);
      break;
    default:
      refuse(ErrorCode::bad_value, std::string(name) + " must be a number");
  }
  if (!std::isfinite(v)) refuse(ErrorCode::bad_value, std::string(name) + " must be finite");
  return v;
}

int32_t as_int32(element e, std::string_view name) {
  return static_cast<int32_t>(as_integer(e, name, INT32_MIN, INT32_MAX));
}

element parse_root(simdjson::dom::parser& parser, std::string_view text) {
  if (!valid_utf8(text)) refuse(GatewayCode::invalid_utf8, "the input is not valid UTF-8");
  element root;
  if (auto error = parser.parse(text.data(), text.size()).get(root); error != simdjson::SUCCESS) {
    refuse(ErrorCode::malformed_json, std::string("malformed JSON: ") + simdjson::error_message(error));
  }
  return root;
}

object parse_object(simdjson::dom::parser& parser, std::string_view text) {
  element root = parse_root(parser, text);
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "the input must be a JSON object");
  return o;
}

simdjson::dom::parser& parser() {
  thread_local simdjson::dom::parser p;
  return p;
}

std::string minified(element e) { return simdjson::minify(e); }

}  // namespace specd::net::json_fields

namespace specd::net {

bool valid_utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace specd::net
