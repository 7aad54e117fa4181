#pragma once
// Jinja2's tests (`x is defined`, `x is string`, `x is equalto y`, ...).
#include <string>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

// Throws TemplateError(runtime) for a test Jinja2 does not have.
bool apply_test(Renderer& renderer, const std::string& name, const Value& subject, CallArgs& args);
bool has_test(const std::string& name);

}  // namespace specd::jinja
