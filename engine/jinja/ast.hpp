#pragma once
// The parsed template: expression and statement nodes, built once by the parser and
// only read by renders (so one compiled template serves any number of threads).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/jinja/value.hpp"

namespace specd::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
  constant,   // value
  name,       // name
  list,       // args
  tuple,      // args
  dict,       // args as key, value, key, value...
  getattr,    // a.name
  getitem,    // a[b]
  slice,      // a[args[0]:args[1]:args[2]] (null parts omitted)
  call,       // a(args, kwargs)
  filter,     // a | name(args, kwargs); a is null inside filter blocks
  test,       // a is [not] name(args)
  not_,       // not a
  negate,     // -a
  plus,       // +a
  binary,     // a op b: + - * / // % **
  concat,     // args joined with ~
  compare,    // a ops[0] args[0] ops[1] args[1] ... (chained as Python)
  and_,       // a and b
  or_,        // a or b
  condition,  // a if b else c (c may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  std::string name;  // variable, attribute, filter, test or operator
  Value value;       // constant
  ExprPtr a, b, c;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // compare operators
  ExprPtr star_args, star_kwargs;
  bool negated = false;  // `is not`
};

struct Stmt;
using Body = std::vector<Stmt>;

enum class StmtKind : uint8_t {
  text,          // text
  output,        // {{ expr }}
  if_,           // expr, body, else_body (elif is an if inside else_body)
  for_,          // targets in expr [if filter_expr], body, else_body
  set,           // targets = expr, or targets[0].attr = expr for namespaces
  set_block,     // {% set targets[0] | filter_expr %} body {% endset %}
  macro,         // name(params) body
  call_block,    // {% call(params) expr %} body
  filter_block,  // {% filter filter_expr %} body
  break_,
  continue_,
  scope,  // a body in its own scope ({% generation %})
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // text data; macro name; namespace attribute for set
  ExprPtr expr;
  ExprPtr filter_expr;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro and call-block parameters with defaults
  Body body;
  Body else_body;
  bool loop_recursive = false;
};

}  // namespace specd::jinja
