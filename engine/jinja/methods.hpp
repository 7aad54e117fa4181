#pragma once
// The Python methods templates call on values: str (strip, split, startswith, format,
// ...), dict (get, items, keys, values) and list (index, count). The immutable sandbox
// refuses the ones that modify a list or dict (append, pop, update, ...).
#include <optional>
#include <string>
#include <string_view>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

enum class MethodAccess { none, safe, unsafe };

MethodAccess method_access(const Value& obj, std::string_view name);
// The method's result, or nullopt when obj's type has no safe method of that name.
std::optional<Value> call_method(Renderer& renderer, const Value& obj, std::string_view name, CallArgs& args);
// obj.name as a value to call later.
Value bind_method(const Value& obj, std::string name);

// A str method's result, or nullopt when str has no such method (string_methods.cpp).
std::optional<Value> string_method(const std::string& s, std::string_view name, CallArgs& args);

// Python's str.strip/lstrip/rstrip (chars null: whitespace).
std::string py_strip(std::string_view s, const Value* chars, bool left, bool right);

}  // namespace specd::jinja
