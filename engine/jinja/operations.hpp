#pragma once
// The operations on values that expressions, filters and methods share: attribute and
// item access under the sandbox's rules, iteration, arithmetic, and argument binding.
#include <optional>
#include <string>
#include <string_view>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

// Raises what using an undefined value raises: UndefinedError, or SecurityError for
// an attribute the sandbox refused.
[[noreturn]] void fail_undefined(const Value& undefined);
// Undefined values pass through; everything else is returned as is.
const Value& require_defined(const Value& v);

// obj.name (attribute first, then item, as Jinja2's getattr).
Value get_attribute(const Value& obj, const std::string& name);
// obj[key] (item first, then attribute, as Jinja2's getitem).
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The items a for loop or a filter iterates: list items, dict keys, string characters.
// Undefined iterates as empty; anything else is a TypeError.
std::shared_ptr<Array> iterate(const Value& v);
// Python len(); TypeError for values without one.
int64_t length_of(const Value& v);
// Python `in`.
bool contains(const Value& container, const Value& item);

// + - * / // % ** on values, with Python's rules and messages.
Value binary_operation(std::string_view op, const Value& a, const Value& b, size_t max_bytes);

// Binds call arguments by position or keyword, as Python does for builtins.
class ArgReader {
 public:
  ArgReader(CallArgs& args, std::string_view function) : args_(args), function_(function) {}
  // The argument at `index` or named `name`, or nullptr.
  const Value* get(size_t index, std::string_view name) const;
  Value get_or(size_t index, std::string_view name, Value fallback) const;
  bool flag(size_t index, std::string_view name, bool fallback) const;
  const Value& required(size_t index, std::string_view name) const;

 private:
  CallArgs& args_;
  std::string_view function_;
};

// markupsafe's escape: & < > " ' as entities.
std::string html_escape(std::string_view s);
// Lowercase/uppercase ASCII letters (Python's would also change other scripts).
std::string ascii_lower(std::string_view s);
std::string ascii_upper(std::string_view s);
bool is_py_space(char c);

}  // namespace specd::jinja
