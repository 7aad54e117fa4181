// Filters over sequences, dicts and generators: first, last, list, items, dictsort,
// sort, min, max, unique, reverse, replace, map, select, reject, selectattr, rejectattr.
#include <algorithm>
#include <cmath>

#include "engine/jinja/filter_functions.hpp"
#include "engine/jinja/filters.hpp"
#include "engine/jinja/methods.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"
#include "engine/jinja/tests.hpp"

namespace specd::jinja::filter {

namespace {

Value sorted(Value& v, ArgReader& r, size_t reverse_index, size_t case_index, size_t attribute_index) {
  bool reverse = reverse_index != size_t(-1) && r.flag(reverse_index, "reverse", false);
  bool case_sensitive = r.flag(case_index, "case_sensitive", false);
  const Value* attribute = r.get(attribute_index, "attribute");
  Array items = *iterate(v);
  auto key = [&](const Value& x) {
    return sort_key(attribute && !attribute->is_none() ? attribute_path(x, py_str(*attribute)) : x, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? less_than(key(b), key(a)) : less_than(key(a), key(b));
  });
  return Value::list(std::move(items));
}

Value select_items(Renderer& renderer, Value& v, CallArgs& args, bool keep, bool by_attribute) {
  size_t at = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw TemplateError(ErrorKind::runtime, "selectattr requires an attribute");
    attribute = py_str(args.positional[at++]);
  }
  std::string test;
  if (at < args.positional.size()) test = py_str(args.positional[at++]);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + std::min(at, args.positional.size()), args.positional.end());
  Array out;
  if (!v.truthy()) return Value::generator({});  // as Jinja2's select_or_reject
  for (const Value& x : *iterate(v)) {
    Value subject = by_attribute ? attribute_path(x, attribute) : x;
    bool pass;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      CallArgs copy = rest;
      pass = apply_test(renderer, test, subject, copy);
    }
    if (pass == keep) out.push_back(x);
  }
  return Value::generator(std::move(out));
}

}  // namespace

Value f_first(Renderer&, Value& v, ArgReader&, CallArgs&) {
  auto items = iterate(v);
  return items->empty() ? Value::undefined("No first item, sequence was empty.") : items->front();
}

Value f_last(Renderer&, Value& v, ArgReader&, CallArgs&) {
  if (v.kind() == Kind::generator) throw TemplateError(ErrorKind::type, "'generator' object is not reversible");
  auto items = iterate(v);
  return items->empty() ? Value::undefined("No last item, sequence was empty.") : items->back();
}

Value f_list(Renderer&, Value& v, ArgReader&, CallArgs&) { return Value::list(*iterate(v)); }

Value f_items(Renderer&, Value& v, ArgReader&, CallArgs&) {
  Array out;
  if (v.is_undefined()) return Value::generator({});
  if (!v.is_mapping()) throw TemplateError(ErrorKind::type, "Can only get item pairs from a mapping.");
  for (const auto& [k, x] : v.object().entries()) out.push_back(Value::tuple({Value(k), x}));
  return Value::generator(std::move(out));
}

Value f_dictsort(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  bool case_sensitive = r.flag(0, "case_sensitive", false);
  std::string by = py_str(r.get_or(1, "by", Value("key")));
  bool reverse = r.flag(2, "reverse", false);
  if (!v.is_mapping()) throw TemplateError(ErrorKind::type, "dictsort needs a mapping");
  Array out;
  for (const auto& [k, x] : v.object().entries()) out.push_back(Value::tuple({Value(k), x}));
  size_t pos = by == "value" ? 1 : 0;
  std::stable_sort(out.begin(), out.end(), [&](const Value& a, const Value& b) {
    Value ka = sort_key(a.array()[pos], case_sensitive), kb = sort_key(b.array()[pos], case_sensitive);
    return reverse ? less_than(kb, ka) : less_than(ka, kb);
  });
  return Value::list(std::move(out));
}

Value f_sort(Renderer&, Value& v, ArgReader& r, CallArgs&) { return sorted(v, r, 0, 1, 2); }

Value f_min(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  Value s = sorted(v, r, size_t(-1), 0, 1);
  return s.array().empty() ? Value::undefined("No aggregated item, sequence was empty.") : s.array().front();
}

Value f_max(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  Value s = sorted(v, r, size_t(-1), 0, 1);
  return s.array().empty() ? Value::undefined("No aggregated item, sequence was empty.") : s.array().back();
}

Value f_unique(Renderer&, Value& v, ArgReader& r, CallArgs&) {
  bool case_sensitive = r.flag(0, "case_sensitive", false);
  const Value* attribute = r.get(1, "attribute");
  Array seen, out;
  for (const Value& x : *iterate(v)) {
    Value key =
        sort_key(attribute && !attribute->is_none() ? attribute_path(x, py_str(*attribute)) : x, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(x);
  }
  return Value::generator(std::move(out));
}

Value f_reverse(Renderer&, Value& v, ArgReader&, CallArgs&) {
  if (v.is_string()) {
    auto chars = iterate(v);
    std::string out;
    for (auto it = chars->rbegin(); it != chars->rend(); ++it) out += it->str();
    return Value(std::move(out));
  }
  Array items = *iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::generator(std::move(items));
}

Value f_replace(Renderer& renderer, Value& v, ArgReader& r, CallArgs&) {
  CallArgs args;
  args.positional = {Value(text_of(r.required(0, "old"))), Value(text_of(r.required(1, "new")))};
  if (const Value* count = r.get(2, "count"); count && !count->is_none()) args.positional.push_back(*count);
  return *call_method(renderer, Value(text_of(v)), "replace", args);
}

// Python int() of a string: optional sign, digits and underscores, surrounding spaces.
Value f_map(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args) {
  Array out;
  if (!v.truthy()) return Value::generator({});  // Jinja2's map skips a false value
  auto items = iterate(v);
  if (const Value* attribute = r.get(size_t(-1), "attribute")) {
    const Value* fallback = r.get(size_t(-1), "default");
    for (const Value& x : *items) {
      Value y = attribute_path(x, py_str(*attribute));
      out.push_back(y.is_undefined() && fallback ? *fallback : y);
    }
    return Value::generator(std::move(out));
  }
  if (args.positional.empty()) throw TemplateError(ErrorKind::runtime, "map requires a filter argument");
  std::string filter = py_str(args.positional[0]);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& x : *items) {
    CallArgs copy = rest;
    out.push_back(apply_filter(renderer, filter, x, copy));
  }
  return Value::generator(std::move(out));
}

Value f_select(Renderer& rn, Value& v, ArgReader&, CallArgs& a) { return select_items(rn, v, a, true, false); }
Value f_reject(Renderer& rn, Value& v, ArgReader&, CallArgs& a) { return select_items(rn, v, a, false, false); }
Value f_selectattr(Renderer& rn, Value& v, ArgReader&, CallArgs& a) { return select_items(rn, v, a, true, true); }
Value f_rejectattr(Renderer& rn, Value& v, ArgReader&, CallArgs& a) { return select_items(rn, v, a, false, true); }

}  // namespace specd::jinja::filter
