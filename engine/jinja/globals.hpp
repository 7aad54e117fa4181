#pragma once
// The names a template sees besides its variables: Jinja2's range, namespace, dict,
// cycler and joiner, and transformers' raise_exception and strftime_now.
#include <string_view>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

// The global of that name, or nullptr. The table is built once and never changes.
const Value* find_global(std::string_view name);

}  // namespace specd::jinja
