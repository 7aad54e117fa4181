#include "engine/jinja/value.hpp"

#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

const Value* Object::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

Value* Object::find(std::string_view key) {
  for (auto& [k, v] : entries_) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* Object::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : entries_) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

void Object::set(Value key, Value value) {
  if (const Value* existing = find(key)) {
    *const_cast<Value*>(existing) = std::move(value);
  } else {
    entries_.emplace_back(std::move(key), std::move(value));
  }
}

Value Value::undefined(std::string message, bool unsafe) {
  Value v;
  v.data_ = std::move(message);
  v.unsafe_ = unsafe;
  return v;
}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::list(Array items) {
  Value v;
  v.kind_ = Kind::list;
  v.data_ = std::make_shared<Array>(std::move(items));
  return v;
}

Value Value::tuple(Array items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::tuple;
  return v;
}

Value Value::generator(Array items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::generator;
  return v;
}

Value Value::dict() {
  Value v;
  v.kind_ = Kind::dict;
  v.data_ = std::make_shared<Object>();
  return v;
}

Value Value::namespace_object() {
  Value v = dict();
  v.kind_ = Kind::namespace_;
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::callable;
  v.data_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::loop(std::shared_ptr<LoopInfo> info) {
  Value v;
  v.kind_ = Kind::loop;
  v.data_ = std::move(info);
  return v;
}

double Value::to_double() const {
  switch (kind_) {
    case Kind::boolean:
      return as_bool() ? 1.0 : 0.0;
    case Kind::integer:
      return static_cast<double>(as_int());
    case Kind::floating:
      return as_float();
    default:
      return 0.0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return as_bool();
    case Kind::integer:
      return as_int() != 0;
    case Kind::floating:
      return as_float() != 0.0;
    case Kind::string:
      return !str().empty();
    case Kind::list:
    case Kind::tuple:
      return !array().empty();
    case Kind::dict:
      return object().size() != 0;
    default:
      return true;  // generators, namespaces, functions: objects are true
  }
}

namespace {

bool numeric(const Value& v) { return v.is_number(); }

bool sequences_equal(const Array& a, const Array& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!equals(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

bool equals(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) {
    if (a.kind() != Kind::floating && b.kind() != Kind::floating) {
      auto as_int = [](const Value& v) { return v.kind() == Kind::boolean ? int64_t{v.as_bool()} : v.as_int(); };
      return as_int(a) == as_int(b);
    }
    return a.to_double() == b.to_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::undefined:
    case Kind::none:
      return true;
    case Kind::string:
      return a.str() == b.str();
    case Kind::list:
    case Kind::tuple:
      return sequences_equal(a.array(), b.array());
    case Kind::dict: {
      const auto& x = a.object();
      const auto& y = b.object();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Kind::generator:
      return a.array_ptr() == b.array_ptr();
    case Kind::namespace_:
      return &a.object() == &b.object();
    case Kind::callable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) {
    if (a.kind() == Kind::integer && b.kind() == Kind::integer) return a.as_int() < b.as_int();
    return a.to_double() < b.to_double();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if ((a.kind() == Kind::list && b.kind() == Kind::list) || (a.kind() == Kind::tuple && b.kind() == Kind::tuple)) {
    const auto& x = a.array();
    const auto& y = b.array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw TemplateError(ErrorKind::type, std::string("'<' not supported between instances of '") + type_name(a) +
                                           "' and '" + type_name(b) + "'");
}

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
    case Kind::tuple:
      return "tuple";
    case Kind::generator:
      return "generator";
    case Kind::dict:
      return "dict";
    case Kind::namespace_:
      return "Namespace";
    case Kind::callable:
      return "function";
    case Kind::loop:
      return "LoopContext";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.kind() == Kind::namespace_) return "jinja2.utils.Namespace object";
  if (v.kind() == Kind::loop) return "jinja2.runtime.LoopContext object";
  return std::string(type_name(v)) + " object";
}

}  // namespace specd::jinja
