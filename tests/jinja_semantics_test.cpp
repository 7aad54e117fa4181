// The renderer's statements and expressions against Jinja2: each snippet's expected
// output or error was produced by Jinja2 3.1 in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls).
#include <doctest/doctest.h>

#include "tests/support/jinja_render_case.hpp"

using specd::jinja::testing::check_case;
using specd::jinja::testing::RenderCase;

TEST_CASE(
    "if, for (loop.*, else, inline filter, break and continue), set, namespace, macro, call and generation blocks "
    "render as Jinja2") {
  const RenderCase cases[] = {
      {"{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"b\": 1}", false, "B"},
      {"{% for x in xs %}{{ loop.index }}/{{ loop.length }}:{{ x }}{% if not loop.last %},{% endif %}{% else %}empty{% "
       "endfor %}",
       "{\"xs\": [\"a\", \"b\", \"c\"]}", false, "1/3:a,2/3:b,3/3:c"},
      {"{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", "{\"xs\": []}", false, "empty"},
      {"{% for x in xs if x > 1 %}{{ loop.index0 }}{{ x }}{{ loop.revindex }}{% endfor %}", "{\"xs\": [1, 2, 3]}",
       false, "022131"},
      {"{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor "
       "%}",
       "{\"xs\": [1, 2, 3, 4, 5]}", false, "13"},
      {"{% for x in xs %}{{ loop.previtem | default('-') }}{{ x }}{{ loop.nextitem | default('-') }} {{ "
       "loop.cycle('odd', 'even') }};{% endfor %}",
       "{\"xs\": [1, 2, 3]}", false, "-12 odd;123 even;23- odd;"},
      {"{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }}|{% endfor %}{{ x }}", "{}", false,
       "12|12|12|1"},
      {"{% set ns = namespace(n=0, items=[]) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
       "{}", false, "6"},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set s %}block {{ a }}{% endset %}[{{ s }}]{% set t | upper %}x{% endset "
       "%}{{ t }}",
       "{}", false, "12[block 1]X"},
      {"{% macro m(a, b='B') %}{{ a }}{{ b }}{{ c }}{{ varargs }}{{ kwargs }}{% endmacro %}{% set c = 3 %}{{ m(1) "
       "}}|{{ m(1, 2, 4, k=5) }}|{{ m(b=1, a=0) }}",
       "{}", false, "1B3(){}|123(4,){'k': 5}|013(){}"},
      {"{% macro list(items) %}<{% for i in items %}{{ caller(i) }}{% endfor %}>{% endmacro %}{% call(x) list([1, 2]) "
       "%}[{{ x }}]{% endcall %}",
       "{}", false, "<[1][2]>"},
      {"{% generation %}inside {{ 1 + 1 }}{% endgeneration %}", "{}", false, "inside 2"},
      {"{% for n in tree recursive %}({{ n.name }}{{ loop.depth }}{% if n.children %}{{ loop(n.children) }}{% endif "
       "%}){% endfor %}",
       "{\"tree\": [{\"name\": \"a\", \"children\": [{\"name\": \"b\", \"children\": []}, {\"name\": \"c\"}]}, "
       "{\"name\": \"d\"}]}",
       false, "(a1(b2)(c2))(d1)"},
  };
  for (const RenderCase& c : cases) check_case(c);
}

TEST_CASE(
    "whitespace control: trim_blocks, lstrip_blocks, dash and plus modifiers, comments and raw blocks as Jinja2") {
  const RenderCase cases[] = {
      {"a\n  {% if true %}\n    b\n  {% endif %}\nc", "{}", false, "a\n    b\nc"},
      {"a  {%- if true -%}  b  {%- endif -%}  c\n{{- ' d ' -}}\n e", "{}", false, "abc d e"},
      {"x\n  {%+ if true %}y{% endif %}\n  {# comment #}\nz {{ 'v' }}\n", "{}", false, "x\n  yz v"},
      {"{% raw %}{{ not rendered }}{% endraw %}", "{}", false, "{{ not rendered }}"},
  };
  for (const RenderCase& c : cases) check_case(c);
}

TEST_CASE("operators, comparisons, slicing, literals and Python str() of values as Jinja2 prints them") {
  const RenderCase cases[] = {
      {"{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' * "
       "2 }} {{ 10 % 4 }}",
       "{}", false, "3 -4 2 3.5 1024 7 9 abab 2"},
      {"{{ 1 ~ 'a' ~ none ~ x ~ [1] }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}", "{}", false, "1aNone[1]|ab|[1, 2]"},
      {"{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' in 'cat' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 1 == 1.0 }} "
       "{{ true == 1 }}",
       "{}", false, "True False True True True True True"},
      {"{{ x and 'y' }}|{{ x or 'z' }}|{{ not x }}|{{ 'a' if x else 'b' }}|{{ 'a' if x }}|", "{\"x\": 0}", false,
       "0|z|True|b||"},
      {"{{ s[1:] }}|{{ s[:-1] }}|{{ s[::-1] }}|{{ s[0] }}|{{ xs[-1] }}|{{ xs[1:3] }}|{{ s[1::2] }}",
       "{\"s\": \"héllo\", \"xs\": [1, 2, 3, 4]}", false, "éllo|héll|olléh|h|4|[2, 3]|él"},
      {"{{ [1, 'a', none, true, 1.5, {'k': (1, 2)}] }}{{ (1,) }}{{ 'it\\'s' }}{{ ['it\\'s', \"q\\\"\"] }}", "{}", false,
       "[1, 'a', None, True, 1.5, {'k': (1, 2)}](1,)it's[\"it's\", 'q\"']"},
      {"{{ 1e16 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 1.0 }} {{ 100.0 / 3 }} {{ 2.5e-3 }} {{ 123456789012345678.0 }}", "{}",
       false, "1e+16 1e-05 0.30000000000000004 1.0 33.333333333333336 0.0025 1.2345678901234568e+17"},
      {"{{ d.a }}{{ d['a'] }}{{ d.get('b', 'dflt') }}{{ d.get('a') }}{{ d.items() | list }}{{ d.keys() | list }}{{ "
       "d.values() | list }}",
       "{\"d\": {\"a\": 1}}", false, "11dflt1[('a', 1)]['a'][1]"},
  };
  for (const RenderCase& c : cases) check_case(c);
}

TEST_CASE("tests and str, dict and list methods give Jinja2's results") {
  const RenderCase cases[] = {
      {"{{ x is defined }}{{ y is undefined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is "
       "iterable }}{{ 'a' is sequence }}{{ 1 is number }}{{ true is boolean }}{{ true is true }}{{ 0 is false }}",
       "{\"x\": 1}", false, "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalse"},
      {"{{ 2 is equalto 2 }}{{ 2 is eq 3 }}{{ 'a' is in ['a'] }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 "
       "}}{{ x is not none }}{{ 1.5 is integer }}{{ 1.5 is float }}",
       "{\"x\": 1}", false, "TrueFalseTrueTrueTrueTrueTrueFalseTrue"},
      {"{{ '  x  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b "
       "'.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a.b.c'.rsplit('.', 1) }}",
       "{}", false, "x|axx|xxa|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a.b', 'c']"},
      {"{{ 'hello'.startswith('he') }}{{ 'hello'.endswith(('x', 'lo')) }}{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}{{ "
       "'a-b'.replace('-', '+') }}{{ 'hello world'.title() }}{{ '{}-{}'.format(1, 'a') }}{{ 'x{0}{name}'.format(1, "
       "name='n') }}",
       "{}", false, "TrueTrueHIhia+bHello World1-ax1n"},
      {"{{ ', '.join(['a', 'b']) }}|{{ 'abcabc'.find('c') }}|{{ 'abcabc'.count('b') }}|{{ [1, 2, 2].count(2) }}|{{ [1, "
       "2].index(2) }}",
       "{}", false, "a, b|2|2|2|1"},
  };
  for (const RenderCase& c : cases) check_case(c);
}

TEST_CASE("undefined values, the sandbox's refusals and type errors are raised with Jinja2's messages") {
  const RenderCase cases[] = {
      {"[{{ x }}]{{ x | length }}{% for i in x %}no{% endfor %}{{ x is iterable }}", "{}", false, "[]0True"},
      {"{{ x.y }}", "{}", true, "UndefinedError: 'x' is undefined"},
      {"{{ d.y.z }}", "{\"d\": {}}", true, "UndefinedError: 'dict object' has no attribute 'y'"},
      {"{{ d.y }}|{{ d['y'] }}|{{ xs[5] }}|", "{\"d\": {}, \"xs\": []}", false, "|||"},
      {"{{ xs.append(1) }}", "{\"xs\": []}", true,
       "SecurityError: access to attribute 'append' of 'list' object is unsafe."},
      {"{{ d.update({}) }}", "{\"d\": {}}", true,
       "SecurityError: access to attribute 'update' of 'dict' object is unsafe."},
      {"{{ d.pop('a') }}", "{\"d\": {\"a\": 1}}", true,
       "SecurityError: access to attribute 'pop' of 'dict' object is unsafe."},
      {"{{ 'a' + d }}", "{\"d\": {}}", true, "TypeError: can only concatenate str (not \"dict\") to str"},
      {"{{ 1 + 'a' }}", "{}", true, "TypeError: unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ x + 1 }}", "{}", true, "UndefinedError: 'x' is undefined"},
      {"{{ raise_exception('custom message') }}", "{}", true, "custom message"},
      {"{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(5, 0, -2) | list }}", "{}", false,
       "[0, 1, 2][1, 3, 5][5, 3, 1]"},
      {"{{ range(200000) | length }}", "{}", true,
       "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
      {"{% set ns = none %}{% set ns.a = 1 %}", "{}", true,
       "TemplateRuntimeError: cannot assign attribute on non-namespace object"},
      {"{{ foo() }}", "{}", true, "UndefinedError: 'foo' is undefined"},
      {"{{ 'abc'() }}", "{}", true, "TypeError: 'str' object is not callable"},
      {"{{ 1 / 0 }}", "{}", true, "ZeroDivisionError: division by zero"},
  };
  for (const RenderCase& c : cases) check_case(c);
}
