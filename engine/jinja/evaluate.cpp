// Renderer's expression half: evaluates an Expr tree to a Value.
#include "engine/jinja/filters.hpp"
#include "engine/jinja/methods.hpp"
#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"
#include "engine/jinja/tests.hpp"

namespace specd::jinja {

namespace {

Value optional_eval(Renderer& r, const ExprPtr& e) { return e ? r.eval(*e) : Value(nullptr); }

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") return less_than(a, b) || equals(a, b);
  return less_than(b, a) || equals(a, b);  // >=
}

}  // namespace

CallArgs Renderer::eval_args(const Expr& e) {
  CallArgs args;
  args.positional.reserve(e.args.size());
  for (const auto& a : e.args) args.positional.push_back(eval(*a));
  if (e.star_args) {
    for (const Value& v : *iterate(eval(*e.star_args))) args.positional.push_back(v);
  }
  for (const auto& [k, v] : e.kwargs) args.keywords.emplace_back(k, eval(*v));
  if (e.star_kwargs) {
    Value d = eval(*e.star_kwargs);
    if (d.is_mapping()) {
      for (const auto& [k, v] : d.object().entries()) args.keywords.emplace_back(py_str(k), v);
    }
  }
  return args;
}

Value Renderer::eval_call(const Expr& e) {
  Value callee;
  if (e.a->kind == ExprKind::getattr) {
    // obj.method(...): call the method directly instead of binding it first.
    Value obj = eval(*e.a->a);
    if (obj.is_undefined()) fail_undefined(obj);
    if (method_access(obj, e.a->name) == MethodAccess::safe || (obj.kind() == Kind::loop && e.a->name == "cycle")) {
      CallArgs args = eval_args(e);
      if (std::optional<Value> v = call_method(*this, obj, e.a->name, args)) return std::move(*v);
    }
    callee = get_attribute(obj, e.a->name);
  } else {
    callee = eval(*e.a);
  }
  CallArgs args = eval_args(e);
  return call(callee, args);
}

Value Renderer::eval_compare(const Expr& e) {
  Value left = eval(*e.a);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i]);
    if (!compare(e.ops[i], left, right)) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Renderer::eval(const Expr& e) {
  switch (e.kind) {
    case ExprKind::constant:
      return e.value;
    case ExprKind::name:
      return lookup(e.name);
    case ExprKind::list:
    case ExprKind::tuple: {
      Array items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a));
      return e.kind == ExprKind::list ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = eval(*e.args[i]);
        d.object().set(std::move(key), eval(*e.args[i + 1]));
      }
      return d;
    }
    case ExprKind::getattr:
      return get_attribute(eval(*e.a), e.name);
    case ExprKind::getitem:
      return get_item(eval(*e.a), eval(*e.b));
    case ExprKind::slice:
      return get_slice(eval(*e.a), optional_eval(*this, e.args[0]), optional_eval(*this, e.args[1]),
                       optional_eval(*this, e.args[2]));
    case ExprKind::call:
      return eval_call(e);
    case ExprKind::filter: {
      Value subject = eval(*e.a);
      CallArgs args = eval_args(e);
      return apply_filter(*this, e.name, std::move(subject), args);
    }
    case ExprKind::test: {
      Value subject = eval(*e.a);
      CallArgs args = eval_args(e);
      return Value(apply_test(*this, e.name, subject, args));
    }
    case ExprKind::not_:
      return Value(!eval(*e.a).truthy());
    case ExprKind::negate:
    case ExprKind::plus: {
      Value v = eval(*e.a);
      if (v.is_undefined()) fail_undefined(v);
      bool neg = e.kind == ExprKind::negate;
      if (v.kind() == Kind::integer) return Value(neg ? -v.as_int() : v.as_int());
      if (v.kind() == Kind::boolean) return Value(int64_t{neg ? -int{v.as_bool()} : int{v.as_bool()}});
      if (v.kind() == Kind::floating) return Value(neg ? -v.as_float() : v.as_float());
      throw TemplateError(ErrorKind::type,
                          std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" + type_name(v) + "'");
    }
    case ExprKind::binary:
      return binary_operation(e.name, eval(*e.a), eval(*e.b), limits_.max_output_bytes);
    case ExprKind::concat: {
      std::string out;
      for (const auto& a : e.args) append_py_str(out, eval(*a));
      check_size(out.size());
      return Value(std::move(out));
    }
    case ExprKind::compare:
      return eval_compare(e);
    case ExprKind::and_: {
      Value left = eval(*e.a);
      return left.truthy() ? eval(*e.b) : left;
    }
    case ExprKind::or_: {
      Value left = eval(*e.a);
      return left.truthy() ? left : eval(*e.b);
    }
    case ExprKind::condition:
      if (eval(*e.b).truthy()) return eval(*e.a);
      if (e.c) return eval(*e.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value();
}

}  // namespace specd::jinja
