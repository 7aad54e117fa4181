#include "engine/jinja/parser.hpp"

#include <initializer_list>
#include <string_view>

#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> options) {
  for (auto o : options) {
    if (s == o) return true;
  }
  return false;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    std::string end;
    Body body = parse_body({}, end);
    if (current().type != TokenType::eof) fail("unexpected token");
    return body;
  }

 private:
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool is_op(std::string_view op) const { return current().type == TokenType::op && current().text == op; }
  bool is_name(std::string_view name) const { return current().type == TokenType::name && current().text == name; }

  [[noreturn]] void fail(const std::string& message) const {
    throw TemplateError(ErrorKind::syntax, message, current().line);
  }

  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::eof:
        return "end of template";
      case TokenType::block_end:
        return "end of statement block";
      case TokenType::variable_end:
        return "end of print statement";
      default:
        return "'" + t.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!is_op(op)) fail("expected token '" + std::string(op) + "', got " + describe(current()));
    ++pos_;
  }
  void expect(TokenType type, const char* what) {
    if (current().type != type) fail(std::string("expected ") + what + ", got " + describe(current()));
    ++pos_;
  }
  std::string expect_name() {
    if (current().type != TokenType::name) fail("expected name, got " + describe(current()));
    return next().text;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }

  ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag named in `ends` (consumed up to and including its name,
  // which is returned in `end`) or the end of the template.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string& end) {
    Body body;
    while (true) {
      const Token& t = current();
      if (t.type == TokenType::eof) {
        if (ends.size() != 0) fail("unexpected end of template, expected '" + std::string(*ends.begin()) + "'");
        return body;
      }
      if (t.type == TokenType::text) {
        Stmt s{StmtKind::text, t.line};
        s.text = t.text;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.type == TokenType::variable_begin) {
        ++pos_;
        Stmt s{StmtKind::output, current().line};
        s.expr = parse_tuple(true);
        expect(TokenType::variable_end, "end of print statement");
        body.push_back(std::move(s));
      } else if (t.type == TokenType::block_begin) {
        ++pos_;
        if (current().type == TokenType::name && one_of(current().text, ends)) {
          end = next().text;
          return body;
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  Stmt parse_statement() {
    int line = current().line;
    std::string tag = expect_name();
    Stmt s{StmtKind::text, line};
    std::string end;
    if (tag == "if") {
      return parse_if(line);
    } else if (tag == "for") {
      return parse_for(line);
    } else if (tag == "set") {
      return parse_set(line);
    } else if (tag == "macro") {
      s.kind = StmtKind::macro;
      s.text = expect_name();
      parse_params(s.params);
      expect(TokenType::block_end, "end of statement block");
      s.body = parse_body({"endmacro"}, end);
    } else if (tag == "call") {
      s.kind = StmtKind::call_block;
      if (is_op("(")) parse_params(s.params);
      s.expr = parse_expression();
      if (s.expr->kind != ExprKind::call) fail("expected call");
      expect(TokenType::block_end, "end of statement block");
      s.body = parse_body({"endcall"}, end);
    } else if (tag == "filter") {
      s.kind = StmtKind::filter_block;
      s.filter_expr = parse_filter(nullptr);
      expect(TokenType::block_end, "end of statement block");
      s.body = parse_body({"endfilter"}, end);
    } else if (tag == "break" || tag == "continue") {
      s.kind = tag == "break" ? StmtKind::break_ : StmtKind::continue_;
    } else if (tag == "generation") {
      s.kind = StmtKind::scope;
      expect(TokenType::block_end, "end of statement block");
      s.body = parse_body({"endgeneration"}, end);
    } else {
      pos_ -= 1;
      fail("Encountered unknown tag '" + tag + "'.");
    }
    expect(TokenType::block_end, "end of statement block");
    return s;
  }

  Stmt parse_if(int line) {
    Stmt s{StmtKind::if_, line};
    s.expr = parse_tuple(false);
    expect(TokenType::block_end, "end of statement block");
    std::string end;
    s.body = parse_body({"elif", "else", "endif"}, end);
    if (end == "elif") {
      s.else_body.push_back(parse_if(current().line));
      return s;
    }
    if (end == "else") {
      expect(TokenType::block_end, "end of statement block");
      s.else_body = parse_body({"endif"}, end);
    }
    expect(TokenType::block_end, "end of statement block");
    return s;
  }

  Stmt parse_for(int line) {
    Stmt s{StmtKind::for_, line};
    parse_targets(s.targets);
    if (!skip_name("in")) fail("expected 'in', got " + describe(current()));
    s.expr = parse_tuple(false);
    if (skip_name("if")) s.filter_expr = parse_expression();
    if (skip_name("recursive")) s.loop_recursive = true;
    expect(TokenType::block_end, "end of statement block");
    std::string end;
    s.body = parse_body({"endfor", "else"}, end);
    if (end == "else") {
      expect(TokenType::block_end, "end of statement block");
      s.else_body = parse_body({"endfor"}, end);
    }
    expect(TokenType::block_end, "end of statement block");
    return s;
  }

  void parse_targets(std::vector<std::string>& targets) {
    bool paren = skip_op("(");
    do {
      targets.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
  }

  Stmt parse_set(int line) {
    Stmt s{StmtKind::set, line};
    std::string first = expect_name();
    s.targets.push_back(first);
    if (skip_op(".")) {
      s.text = expect_name();  // {% set ns.attr = ... %}
    } else {
      while (skip_op(",")) s.targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      s.expr = parse_tuple(true);
      expect(TokenType::block_end, "end of statement block");
      return s;
    }
    s.kind = StmtKind::set_block;
    if (is_op("|")) s.filter_expr = parse_filter(nullptr);
    expect(TokenType::block_end, "end of statement block");
    std::string end;
    s.body = parse_body({"endset"}, end);
    expect(TokenType::block_end, "end of statement block");
    return s;
  }

  void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string name = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression();
      params.emplace_back(std::move(name), std::move(def));
    }
    expect_op(")");
  }

  // ---- expressions ----

  ExprPtr parse_tuple(bool with_condexpr) {
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

  ExprPtr parse_expression() {
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

  ExprPtr binary(ExprKind kind, ExprPtr a, ExprPtr b, int line, std::string op = {}) {
    auto e = make(kind, line);
    e->a = std::move(a);
    e->b = std::move(b);
    e->name = std::move(op);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      int line = next().line;
      e = binary(ExprKind::or_, std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      int line = next().line;
      e = binary(ExprKind::and_, std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(ExprKind::not_, next().line);
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      Token t = next();
      e = binary(ExprKind::binary, std::move(e), parse_concat(), t.line, t.text);
    }
    return e;
  }

  ExprPtr parse_concat() {
    int line = current().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::concat, line);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Token t = next();
      e = binary(ExprKind::binary, std::move(e), parse_pow(), t.line, t.text);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      Token t = next();
      e = binary(ExprKind::binary, std::move(e), parse_unary(true), t.line, t.text);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_postfix(ExprPtr e) {
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

  ExprPtr parse_subscript(ExprPtr e) {
    int line = next().line;  // [
    std::vector<ExprPtr> items;
    do {
      if (is_op("]")) break;
      items.push_back(parse_subscribed());
    } while (skip_op(","));
    expect_op("]");
    if (items.empty()) fail("expected subscript expression");
    auto item =
        make(items.size() == 1 && items[0]->kind == ExprKind::slice ? ExprKind::slice : ExprKind::getitem, line);
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

  ExprPtr parse_subscribed() {
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

  void parse_call_args(Expr& e) {
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

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::call, current().line);
    e->a = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".") && peek().type == TokenType::name) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  // `| name(args)` repeated; a null subject is the body of a filter block or set block.
  ExprPtr parse_filter(ExprPtr subject) {
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

  ExprPtr parse_filter_expr(ExprPtr e) {
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

  ExprPtr parse_test(ExprPtr subject) {
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

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace specd::jinja
