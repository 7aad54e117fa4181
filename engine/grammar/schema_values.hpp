#pragma once
// What the JSON Schema compiler reads from schema values: which keywords it refuses and
// which constrain a value, JSON pointer tokens, and enum/const members as the literal
// JSON text the grammar generates. Plain functions; any thread.
#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

namespace specd::grammar {

// Validation keywords outside the supported subset: compiling a schema with one fails.
bool is_unsupported_keyword(std::string_view key);
// Keywords that constrain a value (as opposed to annotations); enum, anyOf and allOf
// refuse to be combined with these rather than ignore them.
bool is_constraint_keyword(std::string_view key);

std::string escape_pointer_token(std::string_view token);  // "~" -> "~0", "/" -> "~1"
std::string percent_decode(std::string_view text);         // a URI fragment's %XX escapes

// Compact JSON text of a value, numbers in number_forms()' first form.
std::string compact(simdjson::dom::element value);
// The texts a number may be generated as: an integral value also as "N.0" (equal in
// JSON Schema), others in their shortest round-trip form.
std::vector<std::string> number_forms(simdjson::dom::element value);
// Whether a value is of a JSON Schema type ("integer": a number with no fraction).
bool has_type(simdjson::dom::element value, std::string_view type);

}  // namespace specd::grammar
