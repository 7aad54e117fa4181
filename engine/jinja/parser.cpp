#include "engine/jinja/parser.hpp"

#include "engine/jinja/parser_state.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

Body Parser::parse_template() {
  std::string end;
  Body body = parse_body({}, end);
  if (current().type != TokenType::eof) fail("unexpected token");
  return body;
}

Body Parser::parse_body(std::initializer_list<std::string_view> ends, std::string& end) {
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

Stmt Parser::parse_statement() {
  DepthGuard guard(*this);
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

Stmt Parser::parse_if(int line) {
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

Stmt Parser::parse_for(int line) {
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

void Parser::parse_targets(std::vector<std::string>& targets) {
  bool paren = skip_op("(");
  do {
    targets.push_back(expect_name());
  } while (skip_op(","));
  if (paren) expect_op(")");
}

Stmt Parser::parse_set(int line) {
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

void Parser::parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
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

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace specd::jinja
