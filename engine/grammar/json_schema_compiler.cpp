#include "engine/grammar/json_schema_compiler.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "engine/base/errors.hpp"
#include "engine/grammar/json_fragments.hpp"
#include "engine/grammar/schema_disjoint.hpp"
#include "engine/grammar/schema_pattern.hpp"
#include "engine/grammar/schema_values.hpp"

namespace specd::grammar {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

class SchemaCompiler {
 public:
  // Builds into `builder` (a schema embedded in a larger grammar shares its builder).
  SchemaCompiler(std::string_view text, GrammarBuilder& builder) : b_(builder), json_(b_) {
    if (parser_.parse(text.data(), text.size()).get(root_) != simdjson::SUCCESS) {
      throw SpecdError(ErrorCode::bad_value, "the JSON schema is not valid JSON");
    }
  }

  ByteGrammar compile() {
    const int32_t root = b_.declare_rule("root");
    b_.define_rule(root, b_.sequence({compile_value(), json_.ws()}));
    return b_.finish(root);
  }

  // The schema's values without the trailing whitespace; the rules its shared $refs
  // call are defined in the builder too.
  Fragment compile_value() {
    count_references(root_);
    const Fragment value = schema(root_, "");
    while (!pending_.empty()) {
      const auto [rule, pointer] = pending_.back();
      pending_.pop_back();
      expanding_.assign(1, pointer);
      b_.define_rule(rule, schema(resolve(pointer), pointer));
    }
    return value;
  }

 private:
  [[noreturn]] static void refuse(std::string_view keyword, const std::string& pointer, const std::string& why) {
    throw SpecdError(ErrorCode::bad_value, "unsupported JSON Schema keyword '" + std::string(keyword) + "' at " +
                                               (pointer.empty() ? "#" : "#" + pointer) + ": " + why);
  }

  element resolve(const std::string& pointer) {
    element target;
    if (pointer.empty()) return root_;
    if (root_.at_pointer(pointer).get(target) != simdjson::SUCCESS) refuse("$ref", pointer, "no such location");
    return target;
  }

  // oneOf compiles as anyOf, which accepts exactly what oneOf does only when no value
  // matches two branches: anything else is refused rather than loosened.
  void require_disjoint(simdjson::dom::array branches, const std::string& at) {
    const std::vector<element> list(branches.begin(), branches.end());
    auto follow = [&](std::string_view ref) {
      if (ref.empty() || ref[0] != '#') refuse("$ref", at, "only references within the schema (#...) are supported");
      return resolve(percent_decode(ref.substr(1)));
    };
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        if (provably_disjoint(list[i], list[j], follow)) continue;
        refuse("oneOf", at,
               "branches " + std::to_string(i) + " and " + std::to_string(j) +
                   " may both match one value; oneOf is supported where its branches are disjoint (different "
                   "types or const values, or a property both require with disjoint schemas)");
      }
    }
  }

  Fragment reference(std::string_view ref, const std::string& at) {
    if (ref.empty() || ref[0] != '#') refuse("$ref", at, "only references within the schema (#...) are supported");
    const std::string pointer = percent_decode(ref.substr(1));
    if (!pointer.empty() && pointer[0] != '/')
      refuse("$ref", at, "anchors ('" + std::string(ref) + "') are not supported");
    // A definition used once is copied in place (its masks then need no stack); one used
    // from several places, or recursively, becomes one rule that each use calls.
    const bool shared = reference_counts_[pointer] > 1;
    if (!shared && std::find(expanding_.begin(), expanding_.end(), pointer) == expanding_.end()) {
      expanding_.push_back(pointer);
      const Fragment f = schema(resolve(pointer), pointer);
      expanding_.pop_back();
      return f;
    }
    auto it = ref_rules_.find(pointer);
    if (it == ref_rules_.end()) {
      it = ref_rules_.emplace(pointer, b_.declare_rule("ref" + pointer)).first;
      pending_.emplace_back(it->second, pointer);
    }
    return b_.call(it->second);
  }

  void count_references(element e, int depth = 0) {
    if (depth > 1100) return;  // deeper than simdjson parses
    if (e.type() == element_type::ARRAY) {
      for (element item : e.get_array()) count_references(item, depth + 1);
    } else if (e.type() == element_type::OBJECT) {
      for (auto [key, value] : e.get_object()) {
        if (key == "$ref" && value.type() == element_type::STRING) {
          const std::string_view ref = value;
          if (!ref.empty() && ref[0] == '#') ++reference_counts_[percent_decode(ref.substr(1))];
        }
        count_references(value, depth + 1);
      }
    }
  }

  // An object, array or combination (worth a rule of its own when repeated).
  static bool is_structured(element e) {
    if (e.type() != element_type::OBJECT) return false;
    for (auto [key, value] : e.get_object()) {
      if (key == "properties" || key == "items" || key == "anyOf" || key == "oneOf" || key == "allOf" ||
          key == "$ref" || key == "additionalProperties") {
        return true;
      }
      if (key == "type" && value.type() == element_type::STRING &&
          (std::string_view(value) == "object" || std::string_view(value) == "array")) {
        return true;
      }
    }
    return false;
  }

  static bool has_constraint(object s, std::string_view except) {
    for (auto [key, value] : s) {
      if (key != except && is_constraint_keyword(key)) return true;
    }
    return false;
  }

  Fragment schema(element s, const std::string& at) {
    // Schemas inside schemas (and $refs copied in place) recurse: bounded for the stack.
    constexpr int kMaxDepth = 100;
    if (depth_ >= kMaxDepth) refuse("schema", at, "schemas nest deeper than " + std::to_string(kMaxDepth));
    ++depth_;
    Fragment f = schema_at_depth(s, at);
    --depth_;
    return f;
  }

  Fragment schema_at_depth(element s, const std::string& at) {
    if (s.type() == element_type::BOOL) return bool(s) ? json_.any_value() : b_.nothing();
    if (s.type() != element_type::OBJECT) refuse("schema", at, "a schema must be an object or a boolean");
    const object o = s.get_object();
    for (auto [key, value] : o) {
      if (is_unsupported_keyword(key)) refuse(key, at, "outside the supported subset");
      if (key == "uniqueItems" && value.type() == element_type::BOOL && bool(value)) {
        refuse(key, at, "uniqueItems: true is outside the supported subset");
      }
    }
    element value;
    if (o["$ref"].get(value) == simdjson::SUCCESS) return reference(std::string_view(value), at);
    Fragment f = unconditional(o, at);
    if (o["nullable"].get(value) == simdjson::SUCCESS && value.type() == element_type::BOOL && bool(value)) {
      f = b_.alternatives({f, b_.literal("null")});
    }
    return f;
  }

  Fragment unconditional(object o, const std::string& at) {
    element value;
    if (o["allOf"].get(value) == simdjson::SUCCESS) {
      if (value.type() != element_type::ARRAY || value.get_array().size() != 1 || has_constraint(o, "allOf")) {
        refuse("allOf", at, "only allOf with a single schema and no sibling constraints is supported");
      }
      return schema(value.get_array().at(0), at + "/allOf/0");
    }
    for (const std::string_view key : {"anyOf", "oneOf"}) {
      if (o[key].get(value) != simdjson::SUCCESS) continue;
      if (value.type() != element_type::ARRAY || value.get_array().size() == 0)
        refuse(key, at, "must be a non-empty array");
      if (has_constraint(o, key)) refuse(key, at, "combined with sibling constraints is not supported");
      if (key == "oneOf") require_disjoint(value.get_array(), at);
      std::vector<Fragment> options;
      size_t i = 0;
      for (element option : value.get_array())
        options.push_back(schema(option, at + "/" + std::string(key) + "/" + std::to_string(i++)));
      return b_.alternatives(options);
    }
    element enum_values;
    const bool has_enum = o["enum"].get(enum_values) == simdjson::SUCCESS;
    if (has_enum && enum_values.type() != element_type::ARRAY) refuse("enum", at, "must be an array");
    if (o["const"].get(value) == simdjson::SUCCESS) {
      // Pydantic writes a one-value Literal as const, enum and type together.
      if (has_enum) {
        bool listed = false;
        for (element v : enum_values.get_array()) listed = listed || compact(v) == compact(value);
        if (!listed) return b_.nothing();
      }
      return literals({value}, o, "const", at);
    }
    if (has_enum) {
      std::vector<element> values;
      for (element v : enum_values.get_array()) values.push_back(v);
      return literals(values, o, "enum", at);
    }
    std::vector<std::string> types;
    if (o["type"].get(value) == simdjson::SUCCESS) {
      if (value.type() == element_type::STRING) {
        types.emplace_back(std::string_view(value));
      } else if (value.type() == element_type::ARRAY) {
        for (element t : value.get_array()) {
          if (t.type() != element_type::STRING) refuse("type", at, "type names must be strings");
          types.emplace_back(std::string_view(t));
        }
      } else {
        refuse("type", at, "must be a string or an array of strings");
      }
    } else {
      types = {"object", "array", "string", "number", "boolean", "null"};
    }
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<Fragment> options;
    for (const std::string& type : types) {
      if (type == "integer" && has_number) continue;  // numbers include the integers
      options.push_back(typed(o, type, at));
    }
    return b_.alternatives(options);
  }

  Fragment literals(const std::vector<element>& values, object o, std::string_view keyword, const std::string& at) {
    for (auto [key, v] : o) {
      if (key != keyword && key != "type" && key != "enum" && is_constraint_keyword(key)) {
        refuse(keyword, at, "combined with '" + std::string(key) + "' is not supported");
      }
    }
    element type;
    const bool typed_enum = o["type"].get(type) == simdjson::SUCCESS;
    std::vector<Fragment> options;
    for (element v : values) {
      if (typed_enum) {
        bool ok = false;
        if (type.type() == element_type::STRING) ok = has_type(v, std::string_view(type));
        if (type.type() == element_type::ARRAY) {
          for (element t : type.get_array())
            ok = ok || (t.type() == element_type::STRING && has_type(v, std::string_view(t)));
        }
        if (!ok) continue;
      }
      const bool number =
          v.type() == element_type::INT64 || v.type() == element_type::UINT64 || v.type() == element_type::DOUBLE;
      for (const std::string& text : number ? number_forms(v) : std::vector<std::string>{compact(v)}) {
        options.push_back(b_.literal(text));
      }
    }
    return options.empty() ? b_.nothing() : b_.alternatives(options);
  }

  static int count_keyword(object o, std::string_view key, const std::string& at, int fallback) {
    element v;
    if (o[key].get(v) != simdjson::SUCCESS) return fallback;
    double d = -1;
    if (v.type() == element_type::INT64) d = static_cast<double>(int64_t(v));
    if (v.type() == element_type::UINT64) d = static_cast<double>(uint64_t(v));
    if (v.type() == element_type::DOUBLE && std::floor(double(v)) == double(v)) d = double(v);
    if (d < 0) refuse(key, at, "must be a non-negative integer");
    if (d > 10000) refuse(key, at, "bounds above 10000 are not supported");
    return static_cast<int>(d);
  }

  Fragment typed(object o, const std::string& type, const std::string& at) {
    if (type == "string") return string_schema(o, at);
    if (type == "integer") return json_.integer();
    if (type == "number") return json_.number();
    if (type == "boolean") return b_.alternatives({b_.literal("true"), b_.literal("false")});
    if (type == "null") return b_.literal("null");
    if (type == "array") return array_schema(o, at);
    if (type == "object") return object_schema(o, at);
    refuse("type", at, "unknown type '" + type + "'");
  }

  Fragment string_schema(object o, const std::string& at) {
    const int min = count_keyword(o, "minLength", at, 0);
    const int max = count_keyword(o, "maxLength", at, -1);
    if (max >= 0 && max < min) return b_.nothing();
    element pattern;
    if (o["pattern"].get(pattern) == simdjson::SUCCESS) {
      if (pattern.type() != element_type::STRING) refuse("pattern", at, "must be a string");
      if (min > 0 || max >= 0) refuse("pattern", at, "together with minLength or maxLength is not supported");
      return b_.sequence(
          {b_.literal("\""), compile_pattern(b_, json_, std::string_view(pattern), at), b_.literal("\"")});
    }
    return json_.string(min, max);
  }

  Fragment array_schema(object o, const std::string& at) {
    const int min = count_keyword(o, "minItems", at, 0);
    const int max = count_keyword(o, "maxItems", at, -1);
    if (max >= 0 && max < min) return b_.nothing();
    element items;
    const bool has_items = o["items"].get(items) == simdjson::SUCCESS;
    if (has_items && items.type() == element_type::ARRAY)
      refuse("items", at, "tuple items (an array) are not supported");
    const int copies = max < 0 ? std::max(min, 1) + 1 : std::max(max, 1);
    int32_t item_rule = -1;
    if (has_items && copies > 1 && is_structured(items)) {
      // Each bounded repetition is a copy of the item: a structured item is one rule instead.
      item_rule = b_.declare_rule("items" + at);
      b_.define_rule(item_rule, schema(items, at + "/items"));
    }
    const auto item = [&] {
      if (item_rule >= 0) return b_.call(item_rule);
      return has_items ? schema(items, at + "/items") : json_.any_value();
    };
    if (max == 0 || (has_items && items.type() == element_type::BOOL && !bool(items))) {
      return min > 0 ? b_.nothing() : b_.sequence({json_.punct("["), b_.literal("]")});
    }
    const auto more = [&] { return b_.sequence({json_.ws(), json_.punct(","), item()}); };
    Fragment body = b_.sequence({item(), b_.repeat(more, std::max(min - 1, 0), max < 0 ? -1 : max - 1), json_.ws()});
    if (min == 0) body = b_.optional(body);
    return b_.sequence({json_.punct("["), body, b_.literal("]")});
  }

  struct Property {
    std::string name;
    element schema;
    bool required;
    std::string pointer;
    bool any = false;  // a required name without a declared schema: any value
  };

  // The declared properties in schema order, then required names not declared (their
  // value is additionalProperties' schema, or any value). False when a required name
  // may not appear at all.
  bool object_properties(object o, const std::string& at, std::vector<Property>& props) {
    std::set<std::string> required;
    element value;
    if (o["required"].get(value) == simdjson::SUCCESS && value.type() == element_type::ARRAY) {
      for (element r : value.get_array()) {
        if (r.type() == element_type::STRING) required.emplace(std::string_view(r));
      }
    }
    if (o["properties"].get(value) == simdjson::SUCCESS && value.type() == element_type::OBJECT) {
      for (auto [key, schema] : value.get_object()) {
        props.push_back({std::string(key), schema, required.count(std::string(key)) != 0,
                         at + "/properties/" + escape_pointer_token(key)});
      }
    }
    element extra;
    const bool has_extra = o["additionalProperties"].get(extra) == simdjson::SUCCESS;
    for (const std::string& name : required) {
      if (std::any_of(props.begin(), props.end(), [&](const Property& p) { return p.name == name; })) continue;
      if (has_extra && extra.type() == element_type::BOOL && !bool(extra)) return false;
      props.push_back({name, extra, true, at + "/additionalProperties", !has_extra});
    }
    return true;
  }

  // One member between two pairs of states; index 1 of a pair means a member has been
  // written, so a comma comes first.
  void member_step(std::array<int32_t, 2> from, std::array<int32_t, 2> to, Fragment member, bool optional) {
    const Fragment comma = b_.sequence({json_.ws(), json_.punct(",")});
    b_.epsilon(from[0], member.start);
    b_.epsilon(from[1], comma.start);
    b_.epsilon(comma.end, member.start);
    b_.epsilon(member.end, to[1]);
    if (optional) {
      b_.epsilon(from[0], to[0]);
      b_.epsilon(from[1], to[1]);
    }
  }

  Fragment object_schema(object o, const std::string& at) {
    std::vector<Property> props;
    if (!object_properties(o, at, props)) return b_.nothing();
    element extra;
    const bool has_extra = o["additionalProperties"].get(extra) == simdjson::SUCCESS;
    std::vector<std::array<int32_t, 2>> states(props.size() + 1);
    for (auto& s : states) s = {b_.new_state(), b_.new_state()};
    std::vector<std::string> declared;
    for (size_t i = 0; i < props.size(); ++i) {
      const Property& p = props[i];
      declared.push_back(p.name);
      member_step(states[i], states[i + 1],
                  b_.sequence({b_.literal(JsonFragments::quote(p.name)), json_.ws(), json_.punct(":"),
                               p.any ? json_.any_value() : schema(p.schema, p.pointer)}),
                  !p.required);
    }
    const std::array<int32_t, 2> tail = states.back();
    if (!has_extra || extra.type() != element_type::BOOL || bool(extra)) {
      // Further members with any other key, as often as they come (a loop on the tail).
      const Fragment value = has_extra ? schema(extra, at + "/additionalProperties") : json_.any_value();
      member_step(tail, tail, b_.sequence({json_.string_except(declared), json_.ws(), json_.punct(":"), value}), false);
    }
    const Fragment open = json_.punct("{");
    b_.epsilon(open.end, states[0][0]);
    const Fragment close_after_members = b_.sequence({json_.ws(), b_.literal("}")});
    const Fragment close_empty = b_.literal("}");
    b_.epsilon(tail[1], close_after_members.start);
    b_.epsilon(tail[0], close_empty.start);
    const int32_t end = b_.new_state();
    b_.epsilon(close_after_members.end, end);
    b_.epsilon(close_empty.end, end);
    return {open.start, end};
  }

  simdjson::dom::parser parser_;
  element root_;
  GrammarBuilder& b_;
  JsonFragments json_;
  std::vector<std::string> expanding_;
  std::map<std::string, int32_t> ref_rules_;
  std::map<std::string, int> reference_counts_;
  int depth_ = 0;
  std::vector<std::pair<int32_t, std::string>> pending_;
};

}  // namespace

ByteGrammar compile_json_schema(std::string_view schema_text) {
  GrammarBuilder builder;
  return SchemaCompiler(schema_text, builder).compile();
}

Fragment json_schema_fragment(GrammarBuilder& builder, std::string_view schema_text) {
  return SchemaCompiler(schema_text, builder).compile_value();
}

ByteGrammar any_json_object_grammar() {
  GrammarBuilder b;
  JsonFragments json(b);
  const int32_t root = b.declare_rule("root");
  b.define_rule(root, b.sequence({json.any_object(), json.ws()}));
  return b.finish(root);
}

}  // namespace specd::grammar
