#include "engine/jinja/operations.hpp"

#include <cmath>

#include "engine/jinja/methods.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

void fail_undefined(const Value& undefined) {
  throw TemplateError(undefined.undefined_is_unsafe() ? ErrorKind::security : ErrorKind::undefined,
                      undefined.undefined_message());
}

const Value& require_defined(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  return v;
}

namespace {

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(py_string_repr(object_type_repr(obj)) + " has no attribute " + py_string_repr(name));
}

Value method_or_undefined(const Value& obj, const std::string& name) {
  switch (method_access(obj, name)) {
    case MethodAccess::safe:
      return bind_method(obj, name);
    case MethodAccess::unsafe:
      return Value::undefined(
          "access to attribute " + py_string_repr(name) + " of '" + type_name(obj) + "' object is unsafe.", true);
    case MethodAccess::none:
      break;
  }
  return no_attribute(obj, name);
}

Value loop_attribute(const LoopInfo& loop, const std::string& name) {
  auto n = static_cast<int64_t>(loop.items->size());
  int64_t i = loop.index0;
  if (name == "index") return Value(i + 1);
  if (name == "index0") return Value(i);
  if (name == "revindex") return Value(n - i);
  if (name == "revindex0") return Value(n - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == n - 1);
  if (name == "length") return Value(n);
  if (name == "depth") return Value(loop.depth0 + 1);
  if (name == "depth0") return Value(loop.depth0);
  if (name == "previtem") return i > 0 ? (*loop.items)[i - 1] : Value::undefined("there is no previous item");
  if (name == "nextitem") return i + 1 < n ? (*loop.items)[i + 1] : Value::undefined("there is no next item");
  return Value::undefined("'jinja2.runtime.LoopContext object' has no attribute " + py_string_repr(name));
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Kind::undefined:
      fail_undefined(obj);
    case Kind::dict:
      if (method_access(obj, name) != MethodAccess::none) return method_or_undefined(obj, name);
      [[fallthrough]];
    case Kind::namespace_:
      if (const Value* v = obj.object().find(name)) return *v;
      return no_attribute(obj, name);
    case Kind::loop:
      if (name == "cycle") return bind_method(obj, name);
      return loop_attribute(obj.loop_info(), name);
    default:
      return method_or_undefined(obj, name);
  }
}

namespace {

int64_t index_value(const Value& key) { return key.kind() == Kind::boolean ? int64_t{key.as_bool()} : key.as_int(); }

Value no_element(const Value& obj, const Value& key) {
  return Value::undefined(object_type_repr(obj) + " has no element " + py_repr(key));
}

}  // namespace

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  bool int_key = key.kind() == Kind::integer || key.kind() == Kind::boolean;
  switch (obj.kind()) {
    case Kind::dict:
      if (key.is_string()) {
        if (const Value* v = obj.object().find(key.str())) return *v;
        if (method_access(obj, key.str()) != MethodAccess::none) return method_or_undefined(obj, key.str());
        return no_attribute(obj, key.str());
      }
      if (const Value* v = obj.object().find(key)) return *v;
      return no_element(obj, key);
    case Kind::list:
    case Kind::tuple:
      if (int_key) {
        const Array& a = obj.array();
        int64_t i = index_value(key);
        if (i < 0) i += static_cast<int64_t>(a.size());
        if (i >= 0 && i < static_cast<int64_t>(a.size())) return a[i];
        return no_element(obj, key);
      }
      break;
    case Kind::string:
      if (int_key) {
        auto bounds = utf8_boundaries(obj.str());
        int64_t n = static_cast<int64_t>(bounds.size()) - 1;
        int64_t i = index_value(key);
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value(obj.str().substr(bounds[i], bounds[i + 1] - bounds[i]));
        return no_element(obj, key);
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attribute(obj, key.str());
  return no_element(obj, key);
}

namespace {

// Python's slice.indices(): normalised start, stop and step for a length.
void slice_indices(const Value& start, const Value& stop, const Value& step, int64_t n, int64_t& b, int64_t& e,
                   int64_t& s) {
  auto int_or_none = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.kind() != Kind::integer && v.kind() != Kind::boolean) {
      throw TemplateError(ErrorKind::type, "slice indices must be integers or None or have an __index__ method");
    }
    return index_value(v);
  };
  s = int_or_none(step).value_or(1);
  if (s == 0) throw TemplateError(ErrorKind::type, "slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) x += n;
    if (s > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  b = clamp(int_or_none(start), s > 0 ? 0 : n - 1);
  e = clamp(int_or_none(stop), s > 0 ? n : -1);
}

}  // namespace

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  int64_t b, e, s;
  if (obj.is_string()) {
    const std::string& str = obj.str();
    auto bounds = utf8_boundaries(str);
    slice_indices(start, stop, step, static_cast<int64_t>(bounds.size()) - 1, b, e, s);
    std::string out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.append(str, bounds[i], bounds[i + 1] - bounds[i]);
    return Value(std::move(out));
  }
  if (obj.kind() == Kind::list || obj.kind() == Kind::tuple) {
    const Array& a = obj.array();
    slice_indices(start, stop, step, static_cast<int64_t>(a.size()), b, e, s);
    Array out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(a[i]);
    return obj.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  throw TemplateError(ErrorKind::type, std::string("'") + type_name(obj) + "' object is not subscriptable");
}

std::shared_ptr<Array> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::list:
    case Kind::tuple:
    case Kind::generator:
      return v.array_ptr();
    case Kind::undefined:
      return std::make_shared<Array>();
    case Kind::dict: {
      auto keys = std::make_shared<Array>();
      for (const auto& [k, _] : v.object().entries()) keys->emplace_back(k);
      return keys;
    }
    case Kind::string: {
      auto chars = std::make_shared<Array>();
      const std::string& s = v.str();
      auto bounds = utf8_boundaries(s);
      for (size_t i = 0; i + 1 < bounds.size(); ++i)
        chars->emplace_back(s.substr(bounds[i], bounds[i + 1] - bounds[i]));
      return chars;
    }
    default:
      throw TemplateError(ErrorKind::type, std::string("'") + type_name(v) + "' object is not iterable");
  }
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return 0;
    case Kind::string:
      return static_cast<int64_t>(utf8_length(v.str()));
    case Kind::list:
    case Kind::tuple:
      return static_cast<int64_t>(v.array().size());
    case Kind::dict:
      return static_cast<int64_t>(v.object().size());
    default:
      throw TemplateError(ErrorKind::type, std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::string:
      if (!item.is_string()) {
        throw TemplateError(ErrorKind::type,
                            std::string("'in <string>' requires string as left operand, not ") + type_name(item));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::dict:
      return container.object().find(item) != nullptr;
    case Kind::undefined:
      return false;
    default:
      if (!container.is_sequence_like()) {
        throw TemplateError(ErrorKind::type,
                            std::string("argument of type '") + type_name(container) + "' is not iterable");
      }
      for (const Value& x : container.array()) {
        if (equals(x, item)) return true;
      }
      return false;
  }
}

const Value* ArgReader::get(size_t index, std::string_view name) const {
  if (index < args_.positional.size()) return &args_.positional[index];
  for (const auto& [k, v] : args_.keywords) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value ArgReader::get_or(size_t index, std::string_view name, Value fallback) const {
  const Value* v = get(index, name);
  return v ? *v : std::move(fallback);
}

bool ArgReader::flag(size_t index, std::string_view name, bool fallback) const {
  const Value* v = get(index, name);
  return v ? v->truthy() : fallback;
}

const Value& ArgReader::required(size_t index, std::string_view name) const {
  const Value* v = get(index, name);
  if (!v) {
    throw TemplateError(ErrorKind::type,
                        std::string(function_) + "() missing required argument '" + std::string(name) + "'");
  }
  return *v;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

}  // namespace specd::jinja
