// The parser's expression half: Jinja2's precedence from conditional expressions down
// to primaries, postfix access, calls, filters and tests.
#include "engine/jinja/parser_state.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

ExprPtr Parser::parse_tuple(bool with_condexpr) {
  int line = current().line;
  auto one = [&] { return with_condexpr ? parse_expression() : parse_or(); };
  ExprPtr first = one();
  if (!is_op(",")) return first;
  auto t = make(ExprKind::tuple, line);
  t->args.push_back(std::move(first));
  while (skip_op(",")) {
    if (current().type == TokenType::variable_end || current().type == TokenType::block_end || is_op(")")) break;
    t->args.push_back(one());
  }
  return t;
}

ExprPtr Parser::parse_expression() {
  ExprPtr e = parse_or();
  while (is_name("if")) {
    int line = next().line;
    auto cond = make(ExprKind::condition, line);
    cond->a = std::move(e);
    cond->b = parse_or();
    if (skip_name("else")) cond->c = parse_expression();
    e = std::move(cond);
  }
  return e;
}

ExprPtr Parser::binary(ExprKind kind, ExprPtr a, ExprPtr b, int line, std::string op) {
  auto e = make(kind, line);
  e->a = std::move(a);
  e->b = std::move(b);
  e->name = std::move(op);
  return e;
}

ExprPtr Parser::parse_or() {
  ExprPtr e = parse_and();
  while (is_name("or")) {
    int line = next().line;
    e = binary(ExprKind::or_, std::move(e), parse_and(), line);
  }
  return e;
}

ExprPtr Parser::parse_and() {
  ExprPtr e = parse_not();
  while (is_name("and")) {
    int line = next().line;
    e = binary(ExprKind::and_, std::move(e), parse_not(), line);
  }
  return e;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    auto e = make(ExprKind::not_, next().line);
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  int line = current().line;
  ExprPtr left = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (current().type == TokenType::op && one_of(current().text, {"==", "!=", "<", "<=", ">", ">="})) {
      op = next().text;
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && peek().type == TokenType::name && peek().text == "in") {
      pos_ += 2;
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::compare, line);
      cmp->a = std::move(left);
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(left);
}

ExprPtr Parser::parse_concat() {
  int line = current().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(ExprKind::concat, line);
  e->args.push_back(std::move(first));
  while (skip_op("~")) e->args.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_pow() {
  ExprPtr e = parse_unary(true);
  while (is_op("**")) {
    Token t = next();
    e = binary(ExprKind::binary, std::move(e), parse_unary(true), t.line, t.text);
  }
  return e;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    Token t = next();
    e = make(t.text == "-" ? ExprKind::negate : ExprKind::plus, t.line);
    e->a = parse_unary(false);
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

ExprPtr Parser::parse_primary() {
  DepthGuard guard(*this);
  const Token& t = current();
  int line = t.line;
  if (t.type == TokenType::name) {
    std::string name = next().text;
    auto e = make(ExprKind::constant, line);
    if (name == "true" || name == "True") {
      e->value = Value(true);
    } else if (name == "false" || name == "False") {
      e->value = Value(false);
    } else if (name == "none" || name == "None") {
      e->value = Value(nullptr);
    } else {
      e->kind = ExprKind::name;
      e->name = std::move(name);
    }
    return e;
  }
  if (t.type == TokenType::string) {
    std::string s;
    while (current().type == TokenType::string) s += next().text;
    auto e = make(ExprKind::constant, line);
    e->value = Value(std::move(s));
    return e;
  }
  if (t.type == TokenType::integer || t.type == TokenType::floating) {
    auto e = make(ExprKind::constant, line);
    e->value = t.type == TokenType::integer ? Value(t.int_value) : Value(t.float_value);
    next();
    return e;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return make(ExprKind::tuple, line);
    ExprPtr e = parse_expression();
    if (is_op(",")) {
      auto tuple = make(ExprKind::tuple, line);
      tuple->args.push_back(std::move(e));
      while (skip_op(",") && !is_op(")")) tuple->args.push_back(parse_expression());
      e = std::move(tuple);
    }
    expect_op(")");
    return e;
  }
  if (skip_op("[")) {
    auto e = make(ExprKind::list, line);
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression());
    }
    expect_op("]");
    return e;
  }
  if (skip_op("{")) {
    auto e = make(ExprKind::dict, line);
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression());
      expect_op(":");
      e->args.push_back(parse_expression());
    }
    expect_op("}");
    return e;
  }
  fail("unexpected " + describe(t));
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      int line = next().line;
      if (current().type == TokenType::integer) {
        auto item = make(ExprKind::getitem, line);
        item->a = std::move(e);
        item->b = make(ExprKind::constant, line);
        item->b->value = Value(next().int_value);
        e = std::move(item);
      } else {
        auto attr = make(ExprKind::getattr, line);
        attr->a = std::move(e);
        attr->name = expect_name();
        e = std::move(attr);
      }
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr e) {
  int line = next().line;  // [
  std::vector<ExprPtr> items;
  do {
    if (is_op("]")) break;
    items.push_back(parse_subscribed());
  } while (skip_op(","));
  expect_op("]");
  if (items.empty()) fail("expected subscript expression");
  auto item = make(items.size() == 1 && items[0]->kind == ExprKind::slice ? ExprKind::slice : ExprKind::getitem, line);
  if (item->kind == ExprKind::slice) {
    item->args = std::move(items[0]->args);
  } else if (items.size() == 1) {
    item->b = std::move(items[0]);
  } else {
    item->b = make(ExprKind::tuple, line);
    item->b->args = std::move(items);
  }
  item->a = std::move(e);
  return item;
}

ExprPtr Parser::parse_subscribed() {
  int line = current().line;
  auto slice = make(ExprKind::slice, line);
  if (!is_op(":")) {
    ExprPtr e = parse_expression();
    if (!is_op(":")) return e;
    slice->args.push_back(std::move(e));
  } else {
    slice->args.push_back(nullptr);
  }
  next();  // :
  slice->args.push_back(is_op("]") || is_op(",") || is_op(":") ? nullptr : parse_expression());
  if (skip_op(":")) {
    slice->args.push_back(is_op("]") || is_op(",") ? nullptr : parse_expression());
  } else {
    slice->args.push_back(nullptr);
  }
  return slice;
}

void Parser::parse_call_args(Expr& e) {
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) expect_op(",");
    first = false;
    if (is_op(")")) break;
    if (skip_op("*")) {
      e.star_args = parse_expression();
    } else if (skip_op("**")) {
      e.star_kwargs = parse_expression();
    } else if (current().type == TokenType::name && peek().type == TokenType::op && peek().text == "=") {
      std::string key = next().text;
      next();
      e.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      e.args.push_back(parse_expression());
    }
  }
  expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto e = make(ExprKind::call, current().line);
  e->a = std::move(callee);
  parse_call_args(*e);
  return e;
}

std::string Parser::dotted_name() {
  std::string name = expect_name();
  while (is_op(".") && peek().type == TokenType::name) {
    next();
    name += "." + next().text;
  }
  return name;
}

ExprPtr Parser::parse_filter(ExprPtr subject) {
  bool first = true;
  while (is_op("|") || (first && !subject)) {
    if (!skip_op("|") && !first) break;
    first = false;
    auto f = make(ExprKind::filter, current().line);
    f->name = dotted_name();
    if (is_op("(")) parse_call_args(*f);
    f->a = std::move(subject);
    subject = std::move(f);
  }
  return subject;
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      e = parse_filter(std::move(e));
    } else if (is_name("is")) {
      e = parse_test(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_test(ExprPtr subject) {
  auto t = make(ExprKind::test, next().line);  // is
  t->negated = skip_name("not");
  t->name = dotted_name();
  t->a = std::move(subject);
  const Token& c = current();
  if (is_op("(")) {
    parse_call_args(*t);
  } else if ((c.type == TokenType::name || c.type == TokenType::string || c.type == TokenType::integer ||
              c.type == TokenType::floating || is_op("[") || is_op("{")) &&
             !(c.type == TokenType::name && one_of(c.text, {"else", "or", "and"}))) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    t->args.push_back(parse_postfix(parse_primary()));
  }
  if (t->negated) {
    auto n = make(ExprKind::not_, t->line);
    t->negated = false;
    n->a = std::move(t);
    return n;
  }
  return t;
}

ExprPtr Parser::parse_math1() {
  ExprPtr e = parse_concat();
  while (is_op("+") || is_op("-")) {
    Token t = next();
    e = binary(ExprKind::binary, std::move(e), parse_concat(), t.line, t.text);
  }
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr e = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    Token t = next();
    e = binary(ExprKind::binary, std::move(e), parse_pow(), t.line, t.text);
  }
  return e;
}

}  // namespace specd::jinja
