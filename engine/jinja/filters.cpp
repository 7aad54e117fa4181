#include "engine/jinja/filters.hpp"

#include <algorithm>
#include <cmath>

#include "engine/jinja/filter_functions.hpp"
#include "engine/jinja/methods.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"
#include "engine/jinja/tests.hpp"

namespace specd::jinja {

namespace filter {

std::string text_of(const Value& v) { return py_str(v); }

Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = get_item(v, digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(ascii_lower(v.str()));
  return v;
}

namespace {

// Markup stays Markup through the str methods these filters call.
Value like(const Value& v, std::string s) { return v.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s)); }

bool parse_int_text(const std::string& s, int64_t base, int64_t& out);
bool parse_float_text(const std::string& s, double& out);

}  // namespace

Value f_default(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  bool boolean = r.flag(1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return r.get_or(0, "default_value", Value(""));
  return v;
}

Value f_length(Renderer&, Value& v, ArgReader&, CallArgs&) { return Value(length_of(v)); }

Value f_trim(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  return like(v, py_strip(text_of(v), r.get(0, "chars"), true, true));
}

Value f_string(Renderer&, Value& v, ArgReader&, CallArgs&) { return like(v, text_of(v)); }
Value f_upper(Renderer&, Value& v, ArgReader&, CallArgs&) { return like(v, ascii_upper(text_of(v))); }
Value f_lower(Renderer&, Value& v, ArgReader&, CallArgs&) { return like(v, ascii_lower(text_of(v))); }
Value f_safe(Renderer&, Value& v, ArgReader&, CallArgs&) { return Value::markup(text_of(v)); }

Value f_capitalize(Renderer&, Value& v, ArgReader&, CallArgs&) {
  std::string s = ascii_lower(text_of(v));
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return Value(std::move(s));
}

// Jinja2's do_title: each piece after a run of [-\s({\[<] gets an upper first letter.
Value f_title(Renderer&, Value& v, ArgReader&, CallArgs&) {
  std::string s = text_of(v), out;
  bool start = true;
  for (char c : s) {
    bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += c;
      start = true;
    } else {
      out += start ? ascii_upper(std::string(1, c)) : ascii_lower(std::string(1, c));
      start = false;
    }
  }
  return Value(std::move(out));
}

Value f_tojson(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  JsonDumpOptions o;
  o.ensure_ascii = r.flag(0, "ensure_ascii", false);
  Value indent = r.get_or(1, "indent", Value(nullptr));
  if (indent.kind() == Kind::integer) {
    o.indent = std::string(std::max<int64_t>(indent.as_int(), 0), ' ');
  } else if (indent.is_string()) {
    o.indent = indent.str();
  }
  if (o.indent) o.item_separator = ",";
  Value separators = r.get_or(2, "separators", Value(nullptr));
  if (separators.kind() == Kind::list || separators.kind() == Kind::tuple) {
    if (separators.array().size() != 2) throw TemplateError(ErrorKind::type, "separators must be a pair");
    o.item_separator = py_str(separators.array()[0]);
    o.key_separator = py_str(separators.array()[1]);
  }
  o.sort_keys = r.flag(3, "sort_keys", false);
  return Value(json_dumps(v, o));
}

Value f_join(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  std::string sep = text_of(r.get_or(0, "d", Value("")));
  const Value* attribute = r.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : *iterate(v)) {
    if (!first) out += sep;
    first = false;
    append_py_str(out, attribute && !attribute->is_none() ? attribute_path(item, py_str(*attribute)) : item);
  }
  return Value(std::move(out));
}

namespace {

bool parse_int_text(const std::string& s, int64_t base, int64_t& out) {
  std::string t = py_strip(s, nullptr, true, true);
  if (t.empty()) return false;
  try {
    size_t used = 0;
    std::string digits;
    for (char c : t) {
      if (c != '_') digits += c;
    }
    out = std::stoll(digits, &used, static_cast<int>(base));
    return used == digits.size();
  } catch (...) {
    return false;
  }
}

bool parse_float_text(const std::string& s, double& out) {
  std::string t = py_strip(s, nullptr, true, true);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

}  // namespace

Value f_int(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  Value fallback = r.get_or(0, "default", Value(0));
  int64_t base = r.get_or(1, "base", Value(10)).as_int();
  if (v.kind() == Kind::integer) return v;
  if (v.kind() == Kind::boolean) return Value(int64_t{v.as_bool()});
  if (v.kind() == Kind::floating)
    return std::isfinite(v.as_float()) ? Value(static_cast<int64_t>(v.as_float())) : fallback;
  if (v.is_string()) {
    int64_t i;
    if (parse_int_text(v.str(), base, i)) return Value(i);
    double d;
    if (parse_float_text(v.str(), d) && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value f_float(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  Value fallback = r.get_or(0, "default", Value(0.0));
  if (v.is_number()) return Value(v.to_double());
  double d;
  if (v.is_string() && parse_float_text(v.str(), d)) return Value(d);
  return fallback;
}

Value f_abs(Renderer&, Value& v, ArgReader&, CallArgs&) {
  if (v.kind() == Kind::integer) return Value(std::abs(v.as_int()));
  if (v.is_number()) return Value(std::fabs(v.to_double()));
  throw TemplateError(ErrorKind::type, std::string("bad operand type for abs(): '") + type_name(v) + "'");
}

Value f_round(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  int64_t precision = r.get_or(0, "precision", Value(0)).as_int();
  std::string method = py_str(r.get_or(1, "method", Value("common")));
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = require_defined(v).to_double() * scale;
  x = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
  return Value(x / scale);
}

Value f_sum(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  const Value* attribute = r.get(0, "attribute");
  Value total = r.get_or(1, "start", Value(0));
  for (const Value& x : *iterate(v)) {
    total = binary_operation("+", total, attribute && !attribute->is_none() ? attribute_path(x, py_str(*attribute)) : x,
                             size_t(-1));
  }
  return total;
}

Value f_indent(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  Value width = r.get_or(0, "width", Value(4));
  std::string pad = width.is_string() ? width.str() : std::string(std::max<int64_t>(width.as_int(), 0), ' ');
  bool first = r.flag(1, "first", false), blank = r.flag(2, "blank", false);
  std::string s = text_of(v) + "\n";
  // str.splitlines on the line breaks templates contain.
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return like(v, std::move(out));
}

Value f_wordcount(Renderer&, Value& v, ArgReader&, CallArgs&) {
  std::string s = text_of(v);
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    bool word = std::isalnum(c) || c == '_' || c >= 0x80;
    if (word && !in_word) ++n;
    in_word = word;
  }
  return Value(n);
}

Value f_escape(Renderer&, Value& v, ArgReader&, CallArgs&) {
  return v.is_markup() ? v : Value::markup(html_escape(text_of(v)));
}

Value f_pprint(Renderer&, Value& v, ArgReader&, CallArgs&) { return Value(py_repr(v)); }

Value f_attr(Renderer&, Value& v, ArgReader& r, CallArgs&) { return get_attribute(v, py_str(r.required(0, "name"))); }

Value f_format(Renderer&, Value& v, ArgReader&, CallArgs& args) {
  Value params = args.positional.size() == 1 && args.positional[0].is_mapping() ? args.positional[0]
                                                                                : Value::tuple(args.positional);
  return binary_operation("%", Value(text_of(v)), params, size_t(-1));
}

// map / select / reject / selectattr / rejectattr: generators, as in Jinja2.
}  // namespace filter

namespace {

using namespace filter;

struct Entry {
  const char* name;
  FilterFn fn;
};

constexpr Entry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", f_capitalize},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_pprint},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

FilterFn find(const std::string& name) {
  for (const Entry& e : kFilters) {
    if (name == e.name) return e.fn;
  }
  return nullptr;
}

}  // namespace

bool has_filter(const std::string& name) { return find(name) != nullptr; }

Value apply_filter(Renderer& renderer, const std::string& name, Value subject, CallArgs& args) {
  FilterFn fn = find(name);
  if (!fn) throw TemplateError(ErrorKind::runtime, "No filter named '" + name + "' found.");
  ArgReader reader(args, name);
  return fn(renderer, subject, reader, args);
}

}  // namespace specd::jinja
