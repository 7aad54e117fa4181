#pragma once
// The typed readers of the gateway's JSON bodies and frames (simdjson DOM): a member
// present and not null, strings, booleans, bounded integers, finite numbers, each
// refusing a wrong type with bad_value naming the field. A refusal is thrown as
// `Refusal` inside a parse and turned into a ProtocolError at its top. Any thread (the
// parser is per thread).
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/wire_error.hpp"

namespace specd::net::json_fields {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

struct Refusal {
  WireCode code;
  std::string message;
};

[[noreturn]] void refuse(WireCode code, std::string message);

// At most `n` bytes of valid UTF-8 `s`, cut at a character boundary.
std::string utf8_prefix(const std::string& s, size_t n);
// A member that is present and not null.
std::optional<element> member(const object& o, std::string_view name);
std::string as_string(element e, std::string_view name);
bool as_bool(element e, std::string_view name);
// An integer in [lo, hi]; 12.0 and 1e3 are not integers here.
int64_t as_integer(element e, std::string_view name, int64_t lo, int64_t hi);
int32_t as_int32(element e, std::string_view name);
double as_number(element e, std::string_view name);
// The JSON text of `e`, minified, members in their order.
std::string minified(element e);

// The document's root, refusing invalid UTF-8 (invalid_utf8) and malformed JSON.
element parse_root(simdjson::dom::parser& parser, std::string_view text);
// The root, which must be an object.
object parse_object(simdjson::dom::parser& parser, std::string_view text);
// This thread's parser (a parse's elements live until its next parse).
simdjson::dom::parser& parser();

}  // namespace specd::net::json_fields
