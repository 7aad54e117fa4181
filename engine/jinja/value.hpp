#pragma once
// The values a template computes with, with Python's semantics as Jinja2 has them:
// lists and dicts are shared references (a dict keeps insertion order), strings are
// UTF-8 bytes, and undefined carries the message Jinja2's Undefined would raise.
// A Value is not thread-safe to share while a render mutates it (namespaces); a
// compiled Template copies nothing mutable, so renders on different threads are fine.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace specd::jinja {

class Value;
class Renderer;
struct LoopInfo;
struct Stmt;

enum class Kind : uint8_t {
  undefined,
  none,
  boolean,
  integer,
  floating,
  string,
  list,
  tuple,
  generator,  // what map/select/selectattr/items return: iterable, but not a sequence
  dict,
  namespace_,
  callable,
  loop,
};

class Object;
struct Callable;
struct CallArgs;
using NativeFunction = std::function<Value(Renderer&, CallArgs&)>;
using Array = std::vector<Value>;

class Value {
 public:
  Value() : kind_(Kind::undefined) {}
  Value(std::nullptr_t) : kind_(Kind::none) {}
  Value(bool b) : kind_(Kind::boolean), data_(b) {}
  Value(int v) : kind_(Kind::integer), data_(int64_t{v}) {}
  Value(int64_t v) : kind_(Kind::integer), data_(v) {}
  Value(double v) : kind_(Kind::floating), data_(v) {}
  Value(std::string s) : kind_(Kind::string), data_(std::move(s)) {}
  Value(std::string_view s) : kind_(Kind::string), data_(std::string(s)) {}
  Value(const char* s) : kind_(Kind::string), data_(std::string(s)) {}

  static Value undefined(std::string message, bool unsafe = false);
  // A string marked safe (the `safe` and `escape` filters): `+` with a plain string
  // HTML-escapes the plain one, as markupsafe.Markup does.
  static Value markup(std::string s);
  static Value list(Array items = {});
  static Value tuple(Array items);
  static Value generator(Array items);
  static Value dict();
  static Value namespace_object();
  static Value function(std::string name, NativeFunction fn);
  static Value loop(std::shared_ptr<LoopInfo> info);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
  bool is_sequence_like() const { return kind_ == Kind::list || kind_ == Kind::tuple || kind_ == Kind::generator; }
  bool is_mapping() const { return kind_ == Kind::dict; }
  bool is_object() const { return kind_ == Kind::dict || kind_ == Kind::namespace_; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  double to_double() const;  // int, float or bool as a double
  const std::string& str() const { return std::get<std::string>(data_); }
  // An undefined value's message (what UndefinedError says), and whether it is the
  // sandbox's refusal of an unsafe attribute (SecurityError when used).
  const std::string& undefined_message() const { return std::get<std::string>(data_); }
  bool undefined_is_unsafe() const { return unsafe_; }
  bool is_markup() const { return kind_ == Kind::string && markup_; }

  Array& array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  const std::shared_ptr<Array>& array_ptr() const { return std::get<std::shared_ptr<Array>>(data_); }
  Object& object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  LoopInfo& loop_info() const { return *std::get<std::shared_ptr<LoopInfo>>(data_); }

  // Python truthiness.
  bool truthy() const;

 private:
  Kind kind_;
  bool unsafe_ = false;
  bool markup_ = false;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>,
               std::shared_ptr<Callable>, std::shared_ptr<LoopInfo>>
      data_;
};

// A dict: keys (strings, or the numbers a template's literal uses) in insertion order. Templates' dicts are small (a
// message, a tool's schema), so a vector with linear lookup beats a hash map.
class Object {
 public:
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Any key, compared as Python compares dict keys (1 == 1.0 == True).
  const Value* find(const Value& key) const;
  void set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  void reserve(size_t n) { entries_.reserve(n); }

 private:
  std::vector<std::pair<Value, Value>> entries_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Callable {
  std::string name;
  NativeFunction function;
};

// The state behind `loop` inside a for: read through attributes (loop.index, ...).
struct LoopInfo {
  std::shared_ptr<Array> items;
  int64_t index0 = 0;
  int64_t depth0 = 0;
  const Stmt* recursive = nullptr;  // a `for ... recursive` loop: loop(items) renders it again
};

// Python `==` (1 == 1.0 == True; lists and dicts element-wise).
bool equals(const Value& a, const Value& b);
// Python `<` for numbers, strings and sequences; throws TemplateError(TypeError) otherwise.
bool less_than(const Value& a, const Value& b);
// The type name Python's messages use: 'str', 'int', 'dict', 'generator', ...
const char* type_name(const Value& v);
// Jinja2's object_type_repr: "dict object", "None", ...
std::string object_type_repr(const Value& v);

}  // namespace specd::jinja
