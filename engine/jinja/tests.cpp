#include "engine/jinja/tests.hpp"

#include <cmath>

#include "engine/jinja/filters.hpp"
#include "engine/jinja/operations.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

enum class Test {
  defined,
  undefined,
  none,
  string,
  mapping,
  iterable,
  sequence,
  number,
  integer,
  floating,
  boolean,
  true_,
  false_,
  callable,
  equalto,
  ne,
  lt,
  le,
  gt,
  ge,
  in,
  odd,
  even,
  divisibleby,
  sameas,
  lower,
  upper,
  escaped,
  filter,
  test,
};

struct Entry {
  const char* name;
  Test test;
};

constexpr Entry kTests[] = {
    {"defined", Test::defined},
    {"undefined", Test::undefined},
    {"none", Test::none},
    {"string", Test::string},
    {"mapping", Test::mapping},
    {"iterable", Test::iterable},
    {"sequence", Test::sequence},
    {"number", Test::number},
    {"integer", Test::integer},
    {"float", Test::floating},
    {"boolean", Test::boolean},
    {"true", Test::true_},
    {"false", Test::false_},
    {"callable", Test::callable},
    {"equalto", Test::equalto},
    {"eq", Test::equalto},
    {"==", Test::equalto},
    {"ne", Test::ne},
    {"!=", Test::ne},
    {"lt", Test::lt},
    {"lessthan", Test::lt},
    {"<", Test::lt},
    {"le", Test::le},
    {"<=", Test::le},
    {"gt", Test::gt},
    {"greaterthan", Test::gt},
    {">", Test::gt},
    {"ge", Test::ge},
    {">=", Test::ge},
    {"in", Test::in},
    {"odd", Test::odd},
    {"even", Test::even},
    {"divisibleby", Test::divisibleby},
    {"sameas", Test::sameas},
    {"lower", Test::lower},
    {"upper", Test::upper},
    {"escaped", Test::escaped},
    {"filter", Test::filter},
    {"test", Test::test},
};

const Entry* find(const std::string& name) {
  for (const Entry& e : kTests) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

int64_t integer_of(const Value& v) {
  require_defined(v);
  if (v.kind() == Kind::integer) return v.as_int();
  if (v.kind() == Kind::boolean) return v.as_bool();
  if (v.kind() == Kind::floating) return static_cast<int64_t>(v.as_float());
  throw TemplateError(ErrorKind::type, std::string("unsupported operand type for %: '") + type_name(v) + "'");
}

bool same_object(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::none:
    case Kind::undefined:
      return true;
    case Kind::boolean:
      return a.as_bool() == b.as_bool();
    case Kind::list:
    case Kind::tuple:
    case Kind::generator:
      return a.array_ptr() == b.array_ptr();
    case Kind::dict:
    case Kind::namespace_:
      return &a.object() == &b.object();
    default:
      return equals(a, b);  // small ints and interned strings are identical in CPython
  }
}

}  // namespace

bool has_test(const std::string& name) { return find(name) != nullptr; }

bool apply_test(Renderer& renderer, const std::string& name, const Value& v, CallArgs& args) {
  (void)renderer;
  const Entry* entry = find(name);
  if (!entry) throw TemplateError(ErrorKind::runtime, "No test named '" + name + "' found.");
  ArgReader r(args, name);
  auto other = [&]() -> const Value& { return r.required(0, "other"); };
  switch (entry->test) {
    case Test::defined:
      return !v.is_undefined();
    case Test::undefined:
      return v.is_undefined();
    case Test::none:
      return v.is_none();
    case Test::string:
      return v.is_string();
    case Test::mapping:
      return v.kind() == Kind::dict;
    case Test::iterable:
      return v.is_undefined() || v.is_string() || v.is_sequence_like() || v.kind() == Kind::dict;
    case Test::sequence:
      return v.is_undefined() || v.is_string() || v.kind() == Kind::list || v.kind() == Kind::tuple ||
             v.kind() == Kind::dict;
    case Test::number:
      return v.is_number();
    case Test::integer:
      return v.kind() == Kind::integer;
    case Test::floating:
      return v.kind() == Kind::floating;
    case Test::boolean:
      return v.kind() == Kind::boolean;
    case Test::true_:
      return v.kind() == Kind::boolean && v.as_bool();
    case Test::false_:
      return v.kind() == Kind::boolean && !v.as_bool();
    case Test::callable:
      return v.kind() == Kind::callable;
    case Test::equalto:
      return equals(v, other());
    case Test::ne:
      return !equals(v, other());
    case Test::lt:
      return less_than(require_defined(v), require_defined(other()));
    case Test::le:
      return less_than(require_defined(v), require_defined(other())) || equals(v, other());
    case Test::gt:
      return less_than(require_defined(other()), require_defined(v));
    case Test::ge:
      return less_than(require_defined(other()), require_defined(v)) || equals(v, other());
    case Test::in:
      return contains(r.required(0, "seq"), v);
    case Test::odd:
      return std::abs(integer_of(v) % 2) == 1;
    case Test::even:
      return integer_of(v) % 2 == 0;
    case Test::divisibleby: {
      int64_t d = integer_of(r.required(0, "num"));
      if (d == 0) throw TemplateError(ErrorKind::type, "integer division or modulo by zero");
      return integer_of(v) % d == 0;
    }
    case Test::sameas:
      return same_object(v, other());
    case Test::lower:
      return v.is_string() && ascii_lower(v.str()) == v.str();
    case Test::upper:
      return v.is_string() && ascii_upper(v.str()) == v.str();
    case Test::escaped:
      return false;
    case Test::filter:
      return v.is_string() && has_filter(v.str());
    case Test::test:
      return v.is_string() && has_test(v.str());
  }
  return false;
}

}  // namespace specd::jinja
