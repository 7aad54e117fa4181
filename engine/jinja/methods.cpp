#include "engine/jinja/methods.hpp"

#include <initializer_list>

#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    if (s == n) return true;
  }
  return false;
}

bool is_unicode_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::optional<Value> dict_method(const Value& d, std::string_view name, CallArgs& args) {
  ArgReader r(args, name);
  const Object& o = d.object();
  if (name == "get") {
    const Value& key = r.required(0, "key");
    const Value* v = o.find(key);
    return v ? *v : r.get_or(1, "default", Value(nullptr));
  }
  Array out;
  if (name == "items") {
    for (const auto& [k, v] : o.entries()) out.push_back(Value::tuple({Value(k), v}));
  } else if (name == "keys") {
    for (const auto& [k, _] : o.entries()) out.emplace_back(k);
  } else if (name == "values") {
    for (const auto& [_, v] : o.entries()) out.push_back(v);
  } else if (name == "copy") {
    Value copy = Value::dict();
    copy.object() = o;
    return copy;
  } else {
    return std::nullopt;
  }
  return Value::list(std::move(out));
}

std::optional<Value> list_method(const Value& l, std::string_view name, CallArgs& args) {
  ArgReader r(args, name);
  const Array& a = l.array();
  if (name == "index" || name == "count") {
    const Value& x = r.required(0, "value");
    int64_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!equals(a[i], x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") throw TemplateError(ErrorKind::value, "" + py_repr(x) + " is not in list");
    return Value(n);
  }
  if (name == "copy") return Value::list(a);
  return std::nullopt;
}

}  // namespace

std::string py_strip(std::string_view s, const Value* chars, bool left, bool right) {
  auto strip_cp = [&](uint32_t cp) {
    if (!chars || chars->is_none()) return is_unicode_space(cp);
    if (!chars->is_string()) {
      throw TemplateError(ErrorKind::type, std::string("strip arg must be None or str, not ") + type_name(*chars));
    }
    const std::string& set = chars->str();
    size_t p = 0;
    while (p < set.size()) {
      if (decode_utf8(set, p) == cp) return true;
    }
    return false;
  };
  size_t begin = 0, end = s.size();
  while (left && begin < end) {
    size_t p = begin;
    if (!strip_cp(decode_utf8(s, p))) break;
    begin = p;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t p = start;
    if (!strip_cp(decode_utf8(s, p))) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

MethodAccess method_access(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Kind::string:
      return one_of(name,
                    {"strip", "lstrip",     "rstrip",     "split",   "rsplit",  "startswith", "endswith", "upper",
                     "lower", "title",      "capitalize", "replace", "format",  "join",       "find",     "rfind",
                     "count", "splitlines", "isdigit",    "isspace", "isalpha", "isalnum",    "islower",  "isupper"})
                 ? MethodAccess::safe
                 : MethodAccess::none;
    case Kind::dict:
      if (one_of(name, {"get", "items", "keys", "values", "copy"})) return MethodAccess::safe;
      return one_of(name, {"clear", "pop", "popitem", "setdefault", "update"}) ? MethodAccess::unsafe
                                                                               : MethodAccess::none;
    case Kind::list:
      if (one_of(name, {"index", "count", "copy"})) return MethodAccess::safe;
      return one_of(name, {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"})
                 ? MethodAccess::unsafe
                 : MethodAccess::none;
    case Kind::tuple:
      return one_of(name, {"index", "count"}) ? MethodAccess::safe : MethodAccess::none;
    default:
      return MethodAccess::none;
  }
}

std::optional<Value> call_method(Renderer& renderer, const Value& obj, std::string_view name, CallArgs& args) {
  (void)renderer;
  switch (obj.kind()) {
    case Kind::string:
      return string_method(obj.str(), name, args);
    case Kind::dict:
      return dict_method(obj, name, args);
    case Kind::list:
    case Kind::tuple:
      if (method_access(obj, name) != MethodAccess::safe) return std::nullopt;
      return list_method(obj, name, args);
    case Kind::loop:
      if (name == "cycle") {
        if (args.positional.empty()) throw TemplateError(ErrorKind::type, "no items for cycling given");
        return args.positional[obj.loop_info().index0 % args.positional.size()];
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

Value bind_method(const Value& obj, std::string name) {
  std::string label = name;
  return Value::function(std::move(label), [obj, name = std::move(name)](Renderer& r, CallArgs& args) {
    std::optional<Value> v = call_method(r, obj, name, args);
    if (!v) throw TemplateError(ErrorKind::type, "'" + name + "' is not callable");
    return *v;
  });
}

}  // namespace specd::jinja
