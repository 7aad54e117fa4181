#include "engine/grammar/schema_disjoint.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/grammar/schema_values.hpp"

namespace specd::grammar {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr int kMaxDepth = 16;  // $ref hops and nested properties looked through

// The schema after following $refs (at most kMaxDepth).
std::optional<element> dereferenced(element s, const ResolveRef& resolve) {
  for (int hops = 0; hops < kMaxDepth; ++hops) {
    element ref;
    if (s.type() != element_type::OBJECT || s.get_object()["$ref"].get(ref) != simdjson::SUCCESS) return s;
    if (ref.type() != element_type::STRING) return std::nullopt;
    s = resolve(std::string_view(ref));
  }
  return std::nullopt;
}

// The types a schema allows by its "type" keyword; nullopt when it has none.
std::optional<std::set<std::string_view>> types_of(object o) {
  element t;
  if (o["type"].get(t) != simdjson::SUCCESS) return std::nullopt;
  std::set<std::string_view> out;
  if (t.type() == element_type::STRING) {
    out.insert(std::string_view(t));
  } else if (t.type() == element_type::ARRAY) {
    for (element name : t.get_array())
      if (name.type() == element_type::STRING) out.insert(std::string_view(name));
  } else {
    return std::nullopt;
  }
  return out;
}

bool types_meet(const std::set<std::string_view>& a, const std::set<std::string_view>& b) {
  for (std::string_view t : a) {
    if (b.count(t)) return true;
    if ((t == "integer" && b.count("number")) || (t == "number" && b.count("integer"))) return true;
  }
  return false;
}

// The values a schema allows by const or enum; nullopt when it has neither.
std::optional<std::vector<element>> values_of(object o) {
  element v;
  if (o["const"].get(v) == simdjson::SUCCESS) return std::vector<element>{v};
  if (o["enum"].get(v) == simdjson::SUCCESS && v.type() == element_type::ARRAY) {
    std::vector<element> out;
    for (element item : v.get_array()) out.push_back(item);
    return out;
  }
  return std::nullopt;
}

bool is_number(element v) {
  return v.type() == element_type::INT64 || v.type() == element_type::UINT64 || v.type() == element_type::DOUBLE;
}

// 1 and 1.0 are one value in JSON Schema.
bool same_value(element a, element b) {
  if (is_number(a) && is_number(b)) return double(a) == double(b);
  return compact(a) == compact(b);
}

bool value_has_any_type(element v, const std::set<std::string_view>& types) {
  for (std::string_view t : types)
    if (has_type(v, t)) return true;
  return false;
}

bool is_object_schema(object o) {
  const auto types = types_of(o);
  return types && types->size() == 1 && types->count("object");
}

std::set<std::string_view> required_of(object o) {
  std::set<std::string_view> out;
  element r;
  if (o["required"].get(r) == simdjson::SUCCESS && r.type() == element_type::ARRAY) {
    for (element name : r.get_array())
      if (name.type() == element_type::STRING) out.insert(std::string_view(name));
  }
  return out;
}

bool disjoint_at(element a, element b, const ResolveRef& resolve, int depth);

// Two object schemas no object matches both of: a property both require whose schemas
// are disjoint.
bool disjoint_objects(object a, object b, const ResolveRef& resolve, int depth) {
  element pa, pb;
  if (a["properties"].get(pa) != simdjson::SUCCESS || b["properties"].get(pb) != simdjson::SUCCESS) return false;
  if (pa.type() != element_type::OBJECT || pb.type() != element_type::OBJECT) return false;
  const std::set<std::string_view> ra = required_of(a), rb = required_of(b);
  for (auto [name, sa] : pa.get_object()) {
    element sb;
    if (!ra.count(name) || !rb.count(name) || pb.get_object()[name].get(sb) != simdjson::SUCCESS) continue;
    if (disjoint_at(sa, sb, resolve, depth + 1)) return true;
  }
  return false;
}

bool disjoint_at(element a_in, element b_in, const ResolveRef& resolve, int depth) {
  if (depth > kMaxDepth) return false;
  const std::optional<element> a = dereferenced(a_in, resolve), b = dereferenced(b_in, resolve);
  if (!a || !b) return false;
  if (a->type() == element_type::BOOL || b->type() == element_type::BOOL) {
    return (a->type() == element_type::BOOL && !bool(*a)) || (b->type() == element_type::BOOL && !bool(*b));
  }
  if (a->type() != element_type::OBJECT || b->type() != element_type::OBJECT) return false;
  const object oa = a->get_object(), ob = b->get_object();
  const auto va = values_of(oa), vb = values_of(ob);
  if (va && vb) {
    for (element x : *va)
      for (element y : *vb)
        if (same_value(x, y)) return false;
    return true;
  }
  const auto ta = types_of(oa), tb = types_of(ob);
  if (va && tb) {
    for (element x : *va)
      if (value_has_any_type(x, *tb)) return false;
    return true;
  }
  if (vb && ta) {
    for (element y : *vb)
      if (value_has_any_type(y, *ta)) return false;
    return true;
  }
  if (ta && tb && !types_meet(*ta, *tb)) return true;
  return is_object_schema(oa) && is_object_schema(ob) && disjoint_objects(oa, ob, resolve, depth);
}

}  // namespace

bool provably_disjoint(element a, element b, const ResolveRef& resolve) { return disjoint_at(a, b, resolve, 0); }

}  // namespace specd::grammar
