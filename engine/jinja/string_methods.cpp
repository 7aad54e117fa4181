// The str methods templates call: strip, split, startswith, replace, format, join, ...
// with Python's results (case mapping is ASCII only).
#include <initializer_list>

#include "engine/jinja/methods.hpp"
#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

const Value& string_arg(const Value& v, std::string_view what) {
  if (!v.is_string()) {
    throw TemplateError(ErrorKind::type, std::string(what) + " must be str, not " + type_name(v));
  }
  return v;
}

Value split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  Array parts;
  if (!sep || sep->is_none()) {
    // Runs of whitespace separate; leading and trailing whitespace is dropped.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i == s.size()) break;
      size_t start = i;
      while (i < s.size() && !is_py_space(s[i])) ++i;
      words.emplace_back(start, i);
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (from_right) {
        size_t keep = words.size() - maxsplit;
        size_t end = words[keep - 1].second;
        Array out{Value(s.substr(words[0].first, end - words[0].first))};
        for (size_t w = keep; w < words.size(); ++w)
          out.emplace_back(s.substr(words[w].first, words[w].second - words[w].first));
        return Value::list(std::move(out));
      }
      for (int64_t w = 0; w < maxsplit; ++w)
        parts.emplace_back(s.substr(words[w].first, words[w].second - words[w].first));
      size_t rest = words[maxsplit].first;
      size_t end = s.size();
      while (end > rest && is_py_space(s[end - 1])) --end;
      parts.emplace_back(s.substr(rest, end - rest));
      return Value::list(std::move(parts));
    }
    for (auto [b, e] : words) parts.emplace_back(s.substr(b, e - b));
    return Value::list(std::move(parts));
  }
  const std::string& d = string_arg(*sep, "separator").str();
  if (d.empty()) throw TemplateError(ErrorKind::value, "empty separator");
  if (from_right) {
    std::vector<std::string> rev;
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
      if (end < d.size()) break;
      size_t p = s.rfind(d, end - d.size());
      if (p == std::string::npos) break;
      rev.push_back(s.substr(p + d.size(), end - p - d.size()));
      end = p;
    }
    parts.emplace_back(s.substr(0, end));
    for (auto it = rev.rbegin(); it != rev.rend(); ++it) parts.emplace_back(*it);
    return Value::list(std::move(parts));
  }
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    size_t p = s.find(d, start);
    if (p == std::string::npos) break;
    parts.emplace_back(s.substr(start, p - start));
    start = p + d.size();
  }
  parts.emplace_back(s.substr(start));
  return Value::list(std::move(parts));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    const std::string& x = string_arg(a, prefix ? "startswith first arg" : "endswith first arg").str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.kind() == Kind::tuple) {
    for (const Value& a : affix.array()) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
  std::string out;
  if (old.empty()) {
    auto bounds = utf8_boundaries(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      if (count < 0 || done < count) out += with, ++done;
      out.append(s, bounds[i], bounds[i + 1] - bounds[i]);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(old, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += with;
    start = p + old.size();
    ++done;
  }
  out.append(s, start);
  return out;
}

std::string title_case(const std::string& s) {
  std::string out(s);
  bool previous_cased = false;
  for (char& c : out) {
    bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
    if (lower && !previous_cased) c = static_cast<char>(c - 'a' + 'A');
    if (upper && previous_cased) c = static_cast<char>(c - 'A' + 'a');
    previous_cased = lower || upper || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

// str.format with {} / {0} / {name} fields (format specs beyond that are refused).
std::string format_fields(const std::string& f, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '{') {
      size_t close = f.find('}', i);
      if (close == std::string::npos) throw TemplateError(ErrorKind::value, "unmatched '{' in format string");
      std::string field = f.substr(i + 1, close - i - 1);
      bool repr = field.size() >= 2 && field.compare(field.size() - 2, 2, "!r") == 0;
      if (repr || (field.size() >= 2 && field[field.size() - 2] == '!')) field.resize(field.size() - 2);
      if (field.find(':') != std::string::npos) throw TemplateError(ErrorKind::type, "format specs are not supported");
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index < args.positional.size()) v = &args.positional[auto_index++];
      } else if (field.find_first_not_of("0123456789") == std::string::npos) {
        size_t n = std::stoul(field);
        if (n < args.positional.size()) v = &args.positional[n];
      } else {
        for (const auto& [k, kv] : args.keywords) {
          if (k == field) v = &kv;
        }
      }
      if (!v) throw TemplateError(ErrorKind::value, "Replacement index out of range for format");
      out += repr ? py_repr(*v) : py_str(*v);
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

Value join_strings(const std::string& separator, const Value& iterable) {
  std::string out;
  const auto items = iterate(iterable);
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& item = (*items)[i];
    if (!item.is_string()) {
      throw TemplateError(ErrorKind::type, "sequence item " + std::to_string(i) + ": expected str instance, " +
                                               type_name(item) + " found");
    }
    if (i) out += separator;
    out += item.str();
  }
  return Value(std::move(out));
}

// str.find / rfind (code point index, -1 when absent) and str.count.
Value find_or_count(const std::string& s, std::string_view name, const std::string& sub) {
  if (name == "count") {
    int64_t n = 0;
    if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s)) + 1);
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value(n);
  }
  size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
  return Value(p == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_length(s.substr(0, p))));
}

Value split_lines(const std::string& s) {
  Array lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.emplace_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return Value::list(std::move(lines));
}

// isdigit, isspace, isalpha, isalnum, islower, isupper (ASCII).
std::optional<Value> string_predicate(const std::string& s, std::string_view name) {
  auto all = [&](auto pred) {
    if (s.empty()) return false;
    for (char c : s) {
      if (!pred(c)) return false;
    }
    return true;
  };
  auto letter = [](char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name == "isdigit") return Value(all(digit));
  if (name == "isspace") return Value(all(is_py_space));
  if (name == "isalpha") return Value(all(letter));
  if (name == "isalnum") return Value(all([&](char c) { return letter(c) || digit(c); }));
  if (name == "islower") return Value(s != ascii_upper(s) && s == ascii_lower(s));
  if (name == "isupper") return Value(s != ascii_lower(s) && s == ascii_upper(s));
  return std::nullopt;
}

}  // namespace

std::optional<Value> string_method(const std::string& s, std::string_view name, CallArgs& args) {
  ArgReader r(args, name);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = r.get(0, "chars");
    return Value(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    Value maxsplit = r.get_or(1, "maxsplit", Value(-1));
    return split(s, r.get(0, "sep"), maxsplit.as_int(), name == "rsplit");
  }
  if (name == "startswith" || name == "endswith")
    return Value(affix_match(s, r.required(0, "prefix"), name == "startswith"));
  if (name == "upper") return Value(ascii_upper(s));
  if (name == "lower") return Value(ascii_lower(s));
  if (name == "title") return Value(title_case(s));
  if (name == "capitalize") {
    std::string out = ascii_lower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return Value(std::move(out));
  }
  if (name == "replace") {
    const std::string& old = string_arg(r.required(0, "old"), "replace() argument 1").str();
    const std::string& with = string_arg(r.required(1, "new"), "replace() argument 2").str();
    return Value(replace_all(s, old, with, r.get_or(2, "count", Value(-1)).as_int()));
  }
  if (name == "format") return Value(format_fields(s, args));
  if (name == "join") return join_strings(s, r.required(0, "iterable"));
  if (name == "find" || name == "rfind" || name == "count") {
    return find_or_count(s, name, string_arg(r.required(0, "sub"), "must be str").str());
  }
  if (name == "splitlines") return split_lines(s);
  return string_predicate(s, name);
}

}  // namespace specd::jinja
