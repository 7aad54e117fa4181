#include "engine/jinja/python_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<size_t> utf8_boundaries(std::string_view s) {
  std::vector<size_t> b;
  b.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) b.push_back(i);
  }
  b.push_back(s.size());
  return b;
}

uint32_t decode_utf8(std::string_view s, size_t& pos) {
  unsigned char c = s[pos++];
  if (c < 0x80) return c;
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
  uint32_t cp = c & (0x3F >> extra);
  for (int i = 0; i < extra && pos < s.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos++]) & 0x3F);
  return cp;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, laid out as Python's repr: positional for exponents
  // -4..15, otherwise d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out = negative ? "-" : "";
  if (exponent >= 16 || exponent < -4) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + ebuf;
  }
  if (exponent < 0) return out + "0." + std::string(-exponent - 1, '0') + digits;
  if (static_cast<int>(digits.size()) <= exponent + 1) {
    return out + digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
}

std::string py_string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    uint32_t cp = decode_utf8(s, pos);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else {
      append_utf8(out, cp);
    }
  }
  out += quote;
  return out;
}

namespace {

void append_sequence_repr(std::string& out, const Array& items, char open, char close, bool tuple) {
  out += open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(items[i]);
  }
  if (tuple && items.size() == 1) out += ',';
  out += close;
}

void append_dict_repr(std::string& out, const Object& object) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : object.entries()) {
    if (!first) out += ", ";
    first = false;
    out += py_repr(k);
    out += ": ";
    out += py_repr(v);
  }
  out += '}';
}

}  // namespace

void append_py_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return;
    case Kind::none:
      out += "None";
      return;
    case Kind::boolean:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::integer: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out.append(buf, res.ptr);
      return;
    }
    case Kind::floating:
      out += py_float_repr(v.as_float());
      return;
    case Kind::string:
      out += v.str();
      return;
    case Kind::list:
      append_sequence_repr(out, v.array(), '[', ']', false);
      return;
    case Kind::tuple:
      append_sequence_repr(out, v.array(), '(', ')', true);
      return;
    case Kind::dict:
      append_dict_repr(out, v.object());
      return;
    case Kind::namespace_:
      out += "<Namespace ";
      append_dict_repr(out, v.object());
      out += '>';
      return;
    case Kind::generator:
      out += "<generator object>";
      return;
    case Kind::callable:
      out += "<function " + v.callable().name + ">";
      return;
    case Kind::loop:
      out += "<LoopContext>";
      return;
  }
}

std::string py_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  append_py_str(out, v);
  return out;
}

std::string py_repr(const Value& v) {
  if (v.is_string()) return py_string_repr(v.str());
  if (v.is_undefined()) return "Undefined";
  return py_str(v);
}

namespace {

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    unsigned char c = s[pos];
    if (c >= 0x80) {
      size_t start = pos;
      uint32_t cp = decode_utf8(s, pos);
      if (!ensure_ascii) {
        out.append(s.substr(start, pos - start));
        continue;
      }
      char buf[16];
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      continue;
    }
    ++pos;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// json.dumps turns non-string keys into their JSON text.
std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Kind::string:
      return k.str();
    case Kind::none:
      return "null";
    case Kind::boolean:
      return k.as_bool() ? "true" : "false";
    case Kind::integer:
    case Kind::floating:
      return py_str(k);
    default:
      throw TemplateError(ErrorKind::type,
                          std::string("keys must be str, int, float, bool or None, not ") + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  auto newline = [&](int depth) {
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Kind::none:
      out += "null";
      return;
    case Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::integer:
      append_py_str(out, v);
      return;
    case Kind::floating: {
      double d = v.as_float();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : py_float_repr(d);
      return;
    }
    case Kind::string:
      append_json_string(out, v.str(), o.ensure_ascii);
      return;
    case Kind::list:
    case Kind::tuple: {
      const Array& items = v.array();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        dump(out, items[i], o, level + 1);
      }
      if (o.indent) newline(level);
      out += ']';
      return;
    }
    case Kind::dict: {
      const auto& entries = v.object().entries();
      if (entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> order;
      for (const auto& [k, x] : entries) order.emplace_back(json_key(k), &x);
      if (o.sort_keys) {
        std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        append_json_string(out, order[i].first, o.ensure_ascii);
        out += o.key_separator;
        dump(out, *order[i].second, o, level + 1);
      }
      if (o.indent) newline(level);
      out += '}';
      return;
    }
    default:
      throw TemplateError(ErrorKind::type, std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(out, v, options, 0);
  return out;
}

}  // namespace specd::jinja
