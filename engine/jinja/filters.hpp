#pragma once
// Jinja2's builtin filters as chat templates use them, with transformers' tojson
// (json.dumps with ensure_ascii=False, indent, separators, sort_keys).
#include <string>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

// Throws TemplateError(runtime) for a filter Jinja2 does not have (checked when the
// filter runs, as Jinja2 does for filters inside conditional blocks).
Value apply_filter(Renderer& renderer, const std::string& name, Value subject, CallArgs& args);
bool has_filter(const std::string& name);

}  // namespace specd::jinja
