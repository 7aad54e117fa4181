// The Jinja lexer and parser: tokens with their lines, string literal escapes, number
// forms, whitespace control as Jinja2 3.1 applies it, and syntax errors that name the
// template line. Also the render limits and the line a render error carries.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/jinja/json_input.hpp"
#include "engine/jinja/lexer.hpp"
#include "engine/jinja/template.hpp"

using namespace specd::jinja;

namespace {

std::string describe(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    switch (t.type) {
      case TokenType::text:
        out += "T(" + t.text + ")";
        break;
      case TokenType::variable_begin:
        out += "{{";
        break;
      case TokenType::variable_end:
        out += "}}";
        break;
      case TokenType::block_begin:
        out += "{%";
        break;
      case TokenType::block_end:
        out += "%}";
        break;
      case TokenType::name:
        out += "N(" + t.text + ")";
        break;
      case TokenType::string:
        out += "S(" + t.text + ")";
        break;
      case TokenType::integer:
        out += "I(" + std::to_string(t.int_value) + ")";
        break;
      case TokenType::floating:
        out += "F(" + t.text + ")";
        break;
      case TokenType::op:
        out += "O(" + t.text + ")";
        break;
      case TokenType::eof:
        out += "EOF";
        break;
    }
    out += "@" + std::to_string(t.line) + " ";
  }
  return out;
}

std::string lex(const char* source) { return describe(tokenize(source, LexerOptions{})); }

int syntax_error_line(const char* source) {
  try {
    Template::compile(source);
  } catch (const TemplateError& e) {
    CHECK(e.kind() == ErrorKind::syntax);
    return e.line();
  }
  return 0;
}

}  // namespace

TEST_CASE("tags become name, literal and operator tokens with the line each starts on") {
  CHECK(lex("a\n{{ x.y | f(1, 'q') }}\n{% if n >= 2.5 %}b{% endif %}") ==
        "T(a\n)@1 {{@2 N(x)@2 O(.)@2 N(y)@2 O(|)@2 N(f)@2 O(()@2 I(1)@2 O(,)@2 S(q)@2 O())@2 }}@2 T(\n)@2 "
        "{%@3 N(if)@3 N(n)@3 O(>=)@3 F(2.5)@3 %}@3 T(b)@3 {%@3 N(endif)@3 %}@3 EOF@3 ");
  CHECK(lex("{{ a // b ** c ~ d != e }}") ==
        "{{@1 N(a)@1 O(//)@1 N(b)@1 O(**)@1 N(c)@1 O(~)@1 N(d)@1 O(!=)@1 N(e)@1 }}@1 EOF@1 ");
}

TEST_CASE("string literals decode Python escapes and numbers take Python's forms") {
  CHECK(lex(R"({{ 'a\nb\t\'\\' "\u00e9\x41" 'c\q' }})") ==
        "{{@1 S(a\nb\t'\\)@1 S(\xC3\xA9"
        "A)@1 S(c\\q)@1 }}@1 EOF@1 ");
  CHECK(lex("{{ 1_000 0x1f 1e3 2.5e-1 x.0 }}") ==
        "{{@1 I(1000)@1 I(31)@1 F(1e3)@1 F(2.5e-1)@1 N(x)@1 O(.)@1 I(0)@1 }}@1 EOF@1 ");
}

TEST_CASE("a dict literal's closing braces do not end the print tag") {
  CHECK(lex("{{ {'a': {'b': 1}} }}") ==
        "{{@1 O({)@1 S(a)@1 O(:)@1 O({)@1 S(b)@1 O(:)@1 I(1)@1 O(})@1 O(})@1 }}@1 EOF@1 ");
}

TEST_CASE("whitespace control: trim_blocks eats one newline, lstrip_blocks the indent, '-' all, '+' none") {
  CHECK(lex("a\n  {% x %}\nb") == "T(a\n)@1 {%@2 N(x)@2 %}@2 T(b)@3 EOF@3 ");
  CHECK(lex("a  \n {%- x -%}  \n b") == "T(a)@1 {%@2 N(x)@2 %}@2 T(b)@3 EOF@3 ");
  CHECK(lex("a\n  {%+ x +%}\nb") == "T(a\n  )@1 {%@2 N(x)@2 %}@2 T(\nb)@2 EOF@3 ");
  CHECK(lex("a\n  {{ x }}\nb") == "T(a\n  )@1 {{@2 N(x)@2 }}@2 T(\nb)@2 EOF@3 ");
  CHECK(lex("a\n  {# c #}\nb\n") == "T(a\n)@1 T(b)@3 EOF@3 ");  // one trailing newline dropped
  CHECK(lex("a\r\nb\rc") == "T(a\nb\nc)@1 EOF@3 ");
}

TEST_CASE("syntax errors name the template line") {
  CHECK(syntax_error_line("a\nb\n{% if x %}\nno end") == 4);
  CHECK(syntax_error_line("line one\n{{ x + }}") == 2);
  CHECK(syntax_error_line("\n\n{% unknowntag %}") == 3);
  CHECK(syntax_error_line("{{ 'unterminated }}") == 1);
  CHECK(syntax_error_line("\n{# never closed") == 2);
}

TEST_CASE("nesting deeper than 200 brackets or blocks is a syntax error, not a stack overflow") {
  const std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  CHECK(syntax_error_line(deep.c_str()) == 1);
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  CHECK(syntax_error_line(blocks.c_str()) == 1);
  const std::string fine = "{{ " + std::string(100, '(') + "1" + std::string(100, ')') + " }}";
  CHECK(Template::compile(fine).render(Value::dict()) == "1");
}

TEST_CASE("render errors carry the line of the statement that raised") {
  const Template t = Template::compile("ok\n{% for m in messages %}\n{{ m.content.missing.x }}\n{% endfor %}");
  try {
    t.render(value_from_json(R"({"messages": [{"content": {}}]})"));
    FAIL("rendered");
  } catch (const TemplateError& e) {
    CHECK(e.line() == 3);
    CHECK(e.python_form() == "UndefinedError: 'dict object' has no attribute 'missing'");
    CHECK(std::string(e.what()) == "invalid_argument: template line 3: 'dict object' has no attribute 'missing'");
  }
}

TEST_CASE("limits: loop iterations, macro recursion and output size end a render with a limit error") {
  TemplateOptions options;
  options.limits.max_loop_iterations = 1000;
  options.limits.max_recursion_depth = 20;
  options.limits.max_output_bytes = 4096;
  auto error_of = [&](const char* source) -> std::string {
    try {
      Template::compile(source, options).render(Value::dict());
    } catch (const TemplateError& e) {
      CHECK(e.kind() == ErrorKind::limit);
      return e.detail();
    }
    return "rendered";
  };
  CHECK(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}") ==
        "more than 1000 loop iterations");
  CHECK(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}") == "more than 20 nested macro calls");
  CHECK(error_of("{% for i in range(500) %}0123456789{% endfor %}") == "output exceeds 4096 bytes");
  CHECK(error_of("{{ 'x' * 100000 }}") == "string repetition exceeds the output limit");
  CHECK(Template::compile("{% for i in range(10) %}{{ i }}{% endfor %}", options).render(Value::dict()) ==
        "0123456789");
}

TEST_CASE("strftime_now reads the configured clock") {
  TemplateOptions options;
  options.clock = [] {
    std::tm tm{};
    tm.tm_year = 2024 - 1900;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    tm.tm_hour = 12;
    return tm;
  };
  CHECK(Template::compile("{{ strftime_now('%d %b %Y %H:%M') }}", options).render(Value::dict()) ==
        "26 Jul 2024 12:00");
}
