#pragma once
// Values as Python prints them: str() (what {{ x }} writes), repr() (inside lists and
// dicts), float repr, and json.dumps as transformers' tojson calls it. Templates print
// these, so they must match CPython byte for byte.
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/utf8.hpp"
#include "engine/jinja/value.hpp"

namespace specd::jinja {

// Python str(v); undefined prints as empty (Jinja2's default Undefined).
std::string py_str(const Value& v);
void append_py_str(std::string& out, const Value& v);
std::string py_repr(const Value& v);
std::string py_float_repr(double d);
std::string py_string_repr(std::string_view s);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // None, or the text of one level (indent=2 is two spaces)
  std::string item_separator = ", ";  // json.dumps' defaults: ", " without indent, "," with it
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// json.dumps; throws TemplateError(TypeError) for values JSON has no form for.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

// UTF-8 helpers: Python indexes strings by code point.
size_t utf8_length(std::string_view s);
// Byte offset of each code point boundary of s (size utf8_length(s) + 1).
std::vector<size_t> utf8_boundaries(std::string_view s);
uint32_t decode_utf8(std::string_view s, size_t& pos);

}  // namespace specd::jinja
