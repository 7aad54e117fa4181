#pragma once
// The parser's state, shared by its two halves: statements (parser.cpp) and
// expressions (parse_expression.cpp). Internal to engine/jinja.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/jinja/ast.hpp"
#include "engine/jinja/lexer.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

inline bool one_of(std::string_view s, std::initializer_list<std::string_view> options) {
  for (auto o : options) {
    if (s == o) return true;
  }
  return false;
}

// Recursive descent over the token list; one per compile.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template();

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
  Body parse_body(std::initializer_list<std::string_view> ends, std::string& end);

  Stmt parse_statement();

  Stmt parse_if(int line);

  Stmt parse_for(int line);

  void parse_targets(std::vector<std::string>& targets);

  Stmt parse_set(int line);

  void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params);

  // ---- expressions ----

  ExprPtr parse_tuple(bool with_condexpr);

  ExprPtr parse_expression();

  ExprPtr binary(ExprKind kind, ExprPtr a, ExprPtr b, int line, std::string op = {});

  ExprPtr parse_or();

  ExprPtr parse_and();

  ExprPtr parse_not();

  ExprPtr parse_compare();

  ExprPtr parse_math1();

  ExprPtr parse_concat();

  ExprPtr parse_math2();

  ExprPtr parse_pow();

  ExprPtr parse_unary(bool with_filter);

  ExprPtr parse_primary();

  ExprPtr parse_postfix(ExprPtr e);

  ExprPtr parse_subscript(ExprPtr e);

  ExprPtr parse_subscribed();

  void parse_call_args(Expr& e);

  ExprPtr parse_call(ExprPtr callee);

  std::string dotted_name();

  // `| name(args)` repeated; a null subject is the body of a filter block or set block.
  ExprPtr parse_filter(ExprPtr subject);

  ExprPtr parse_filter_expr(ExprPtr e);

  ExprPtr parse_test(ExprPtr subject);

  // Nesting of brackets and blocks: bounded, so a hostile template cannot exhaust the stack.
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxDepth) parser.fail("template nested more than 200 levels deep");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };
  static constexpr int kMaxDepth = 200;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace specd::jinja
