#include "engine/jinja/globals.hpp"

#include <ctime>
#include <map>
#include <string>

#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

// Jinja2's sandbox refuses ranges above this many items.
constexpr int64_t kMaxRange = 100000;

int64_t int_arg(const Value& v, const char* what) {
  if (v.kind() == Kind::integer) return v.as_int();
  if (v.kind() == Kind::boolean) return v.as_bool();
  throw TemplateError(ErrorKind::type, std::string("'") + type_name(v) +
                                           "' object cannot be interpreted as an integer" +
                                           (what[0] ? std::string(" (") + what + ")" : ""));
}

Value range(Renderer& r, CallArgs& args) {
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) throw TemplateError(ErrorKind::type, "range expected 1 to 3 arguments");
  int64_t start = 0, stop, step = 1;
  if (p.size() == 1) {
    stop = int_arg(p[0], "");
  } else {
    start = int_arg(p[0], "");
    stop = int_arg(p[1], "");
    if (p.size() == 3) step = int_arg(p[2], "");
  }
  if (step == 0) throw TemplateError(ErrorKind::value, "range() arg 3 must not be zero");
  int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                       : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (n > kMaxRange) {
    throw TemplateError(ErrorKind::overflow,
                        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  Array out;
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
  (void)r;
  return Value::list(std::move(out));
}

Value make_dict(CallArgs& args, Value d) {
  for (const Value& p : args.positional) {
    if (p.is_object()) {
      for (const auto& [k, v] : p.object().entries()) d.object().set(k, v);
    }
  }
  for (auto& [k, v] : args.keywords) d.object().set(k, v);
  return d;
}

Value namespace_fn(Renderer&, CallArgs& args) { return make_dict(args, Value::namespace_object()); }
Value dict_fn(Renderer&, CallArgs& args) { return make_dict(args, Value::dict()); }

Value raise_exception(Renderer&, CallArgs& args) {
  throw TemplateError(ErrorKind::raised, args.positional.empty() ? "" : py_str(args.positional[0]));
}

Value strftime_now(Renderer& r, CallArgs& args) {
  ArgReader reader(args, "strftime_now");
  std::string format = py_str(reader.required(0, "format"));
  std::tm now = r.clock()();
  char buf[256];
  size_t n = std::strftime(buf, sizeof buf, format.c_str(), &now);
  return Value(std::string(buf, n));
}

// joiner(sep): returns "" the first time it is called, then sep.
Value joiner(Renderer&, CallArgs& args) {
  std::string sep = args.positional.empty() ? ", " : py_str(args.positional[0]);
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](Renderer&, CallArgs&) {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(sep);
  });
}

const std::map<std::string, Value, std::less<>>& table() {
  static const auto* globals = new std::map<std::string, Value, std::less<>>{
      {"range", Value::function("range", range)},
      {"namespace", Value::function("namespace", namespace_fn)},
      {"dict", Value::function("dict", dict_fn)},
      {"raise_exception", Value::function("raise_exception", raise_exception)},
      {"strftime_now", Value::function("strftime_now", strftime_now)},
      {"joiner", Value::function("joiner", joiner)},
  };
  return *globals;
}

}  // namespace

const Value* find_global(std::string_view name) {
  const auto& t = table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace specd::jinja
