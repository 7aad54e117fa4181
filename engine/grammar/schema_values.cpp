#include "engine/grammar/schema_values.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "engine/grammar/json_fragments.hpp"

namespace specd::grammar {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// clang-format off
const std::set<std::string_view> kUnsupported = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependencies",
    "dependentRequired", "dependentSchemas", "if", "then", "else", "not", "contains", "minContains",
    "maxContains", "prefixItems", "unevaluatedItems", "unevaluatedProperties", "$dynamicRef",
    "$recursiveRef", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "disallow", "extends",
    "divisibleBy", "contentSchema"};
// clang-format on
const std::set<std::string_view> kConstraints = {"type",      "properties", "required", "additionalProperties",
                                                 "items",     "minItems",   "maxItems", "minLength",
                                                 "maxLength", "pattern",    "enum",     "const",
                                                 "anyOf",     "oneOf",      "allOf",    "nullable"};

std::string number_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

}  // namespace

bool is_unsupported_keyword(std::string_view key) { return kUnsupported.count(key) != 0; }
bool is_constraint_keyword(std::string_view key) { return kConstraints.count(key) != 0; }

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string> number_forms(element e) {
  if (e.type() == element_type::INT64) return {std::to_string(int64_t(e)), std::to_string(int64_t(e)) + ".0"};
  if (e.type() == element_type::UINT64) return {std::to_string(uint64_t(e)), std::to_string(uint64_t(e)) + ".0"};
  const double v = double(e);
  if (std::floor(v) == v && std::fabs(v) < 9007199254740992.0) {
    const std::string i = std::to_string(static_cast<int64_t>(v));
    return {i, i + ".0"};
  }
  return {number_text(v)};
}

std::string compact(element e) {
  switch (e.type()) {
    case element_type::ARRAY: {
      std::string out = "[";
      for (element item : e.get_array()) out += (out.size() > 1 ? "," : "") + compact(item);
      return out + "]";
    }
    case element_type::OBJECT: {
      std::string out = "{";
      for (auto [key, value] : e.get_object()) {
        out += (out.size() > 1 ? "," : "") + JsonFragments::quote(key) + ":" + compact(value);
      }
      return out + "}";
    }
    case element_type::STRING:
      return JsonFragments::quote(std::string_view(e));
    case element_type::BOOL:
      return bool(e) ? "true" : "false";
    case element_type::NULL_VALUE:
      return "null";
    default:
      return number_forms(e).front();
  }
}

bool has_type(element e, std::string_view type) {
  switch (e.type()) {
    case element_type::ARRAY:
      return type == "array";
    case element_type::OBJECT:
      return type == "object";
    case element_type::STRING:
      return type == "string";
    case element_type::BOOL:
      return type == "boolean";
    case element_type::NULL_VALUE:
      return type == "null";
    case element_type::DOUBLE:
      if (type == "integer") return std::floor(double(e)) == double(e);
      return type == "number";
    default:
      return type == "number" || type == "integer";
  }
}

}  // namespace specd::grammar
