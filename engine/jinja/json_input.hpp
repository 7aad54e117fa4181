#pragma once
// Template variables from JSON text (a request's messages and tools, a CLI's input
// file): objects keep their key order, as Python's json.loads does.
#include <string_view>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

// Throws SpecdError(malformed_json) for text that is not JSON.
Value value_from_json(std::string_view json);

}  // namespace specd::jinja
