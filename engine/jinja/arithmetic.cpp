// binary_operation (operations.hpp): + - * / // % ** with Python's rules and messages,
// sequence repetition under the output limit, and str % args formatting.
#include <cmath>
#include <cstdio>

#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  throw TemplateError(ErrorKind::type, "unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) +
                                           "' and '" + type_name(b) + "'");
}

int64_t int_of(const Value& v) { return v.kind() == Kind::boolean ? int64_t{v.as_bool()} : v.as_int(); }

Value repeat(const Value& seq, int64_t times, size_t max_bytes) {
  times = std::max<int64_t>(times, 0);
  if (seq.is_string()) {
    if (seq.str().size() * static_cast<size_t>(times) > max_bytes) {
      throw TemplateError(ErrorKind::limit, "string repetition exceeds the output limit");
    }
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value(std::move(out));
  }
  Array out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.array().begin(), seq.array().end());
  return seq.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  bool ints = a.kind() != Kind::floating && b.kind() != Kind::floating;
  if (op == "+" || op == "-" || op == "*") {
    if (ints) {
      int64_t x = int_of(a), y = int_of(b);
      return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
    }
    double x = a.to_double(), y = b.to_double();
    return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }
  if (op == "**") {
    if (ints && int_of(b) >= 0) {
      int64_t r = 1, x = int_of(a);
      for (int64_t i = 0; i < int_of(b); ++i) r *= x;
      return Value(r);
    }
    return Value(std::pow(a.to_double(), b.to_double()));
  }
  bool zero = ints ? int_of(b) == 0 : b.to_double() == 0.0;
  if (zero) {
    throw TemplateError(ErrorKind::arithmetic, op == "/"    ? "division by zero"
                                               : op == "//" ? "integer division or modulo by zero"
                                                            : "integer modulo by zero");
  }
  if (op == "/") return Value(a.to_double() / b.to_double());
  if (ints) {
    int64_t x = int_of(a), y = int_of(b);
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      q -= 1;
      r += y;
    }
    return Value(op == "//" ? q : r);
  }
  double x = a.to_double(), y = b.to_double();
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  if (op == "%") return Value(r);
  return Value(std::floor(x / y));
}

Value percent_format(const Value& format, const Value& args);

}  // namespace

Value binary_operation(std::string_view op, const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_markup() || b.is_markup()) {
      if (a.is_string() && b.is_string()) {
        return Value::markup((a.is_markup() ? a.str() : html_escape(a.str())) +
                             (b.is_markup() ? b.str() : html_escape(b.str())));
      }
    }
    if (a.is_string() && b.is_string()) {
      if (a.str().size() + b.str().size() > max_bytes)
        throw TemplateError(ErrorKind::limit, "string exceeds the output limit");
      return Value(a.str() + b.str());
    }
    if (a.is_string()) {
      throw TemplateError(ErrorKind::type,
                          std::string("can only concatenate str (not \"") + type_name(b) + "\") to str");
    }
    if ((a.kind() == Kind::list && b.kind() == Kind::list) || (a.kind() == Kind::tuple && b.kind() == Kind::tuple)) {
      Array out = a.array();
      out.insert(out.end(), b.array().begin(), b.array().end());
      return a.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.kind() == Kind::list) {
      throw TemplateError(ErrorKind::type,
                          std::string("can only concatenate list (not \"") + type_name(b) + "\") to list");
    }
  }
  if (op == "*") {
    bool a_seq = a.is_string() || a.kind() == Kind::list || a.kind() == Kind::tuple;
    bool b_seq = b.is_string() || b.kind() == Kind::list || b.kind() == Kind::tuple;
    if (a_seq && (b.kind() == Kind::integer || b.kind() == Kind::boolean)) return repeat(a, int_of(b), max_bytes);
    if (b_seq && (a.kind() == Kind::integer || a.kind() == Kind::boolean)) return repeat(b, int_of(a), max_bytes);
  }
  if (op == "%" && a.is_string()) return percent_format(a, b);
  unsupported(op, a, b);
}

namespace {

// str % args with the conversions templates use: %s %r %d %i %f %%.
Value percent_format(const Value& format, const Value& args) {
  Array items = args.kind() == Kind::tuple ? args.array() : Array{args};
  const std::string& f = format.str();
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) throw TemplateError(ErrorKind::type, "incomplete format");
    char c = f[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= items.size()) throw TemplateError(ErrorKind::type, "not enough arguments for format string");
    const Value& v = items[next++];
    if (c == 's') {
      out += py_str(v);
    } else if (c == 'r') {
      out += py_repr(v);
    } else if ((c == 'd' || c == 'i') && v.is_number()) {
      out += std::to_string(v.kind() == Kind::floating ? static_cast<int64_t>(v.as_float()) : int_of(v));
    } else if (c == 'f' && v.is_number()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", v.to_double());
      out += buf;
    } else {
      throw TemplateError(ErrorKind::type, std::string("unsupported format character '") + c + "'");
    }
  }
  if (next < items.size()) throw TemplateError(ErrorKind::type, "not all arguments converted during string formatting");
  return Value(std::move(out));
}

}  // namespace

}  // namespace specd::jinja
