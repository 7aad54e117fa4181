// The filters chat templates use, against Jinja2: each expected string was printed by
// Jinja2 3.1 with transformers' tojson (json.dumps with ensure_ascii=False).
#include <doctest/doctest.h>

#include "tests/support/jinja_render_case.hpp"

using specd::jinja::testing::check_case;
using specd::jinja::testing::RenderCase;

TEST_CASE("filters give Jinja2's output byte for byte (tojson as json.dumps, Markup from safe, generators from map)") {
  const RenderCase cases[] = {
      {"{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}", "{}", false, "a b|a"},
      {"{{ x | tojson }}", "{\"x\": {\"b\": [1, 2.5, true, null], \"a\": \"é\\\"\\n<\\u0001\"}}", false,
       "{\"b\": [1, 2.5, true, null], \"a\": \"é\\\"\\n<\\u0001\"}"},
      {"{{ x | tojson(indent=2) }}", "{\"x\": {\"b\": [1, {}], \"a\": [], \"c\": {\"d\": \"e\"}}}", false,
       "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": [],\n  \"c\": {\n    \"d\": \"e\"\n  }\n}"},
      {"{{ x | tojson(separators=(',', ':'), sort_keys=true) }}", "{\"x\": {\"b\": 1, \"a\": [1, 2]}}", false,
       "{\"a\":[1,2],\"b\":1}"},
      {"{{ x | tojson(ensure_ascii=true) }}", "{\"x\": \"é😀\"}", false, "\"\\u00e9\\ud83d\\ude00\""},
      {"{{ [1, 2.0, 1e20, 0.1, -0.0, 1e-7, 123456789.125] | tojson }}", "{}", false,
       "[1, 2.0, 1e+20, 0.1, -0.0, 1e-07, 123456789.125]"},
      {"{{ x | length }} {{ 'héllo' | length }} {{ {'a': 1} | length }} {{ y | length }}", "{\"x\": [1, 2, 3]}", false,
       "3 5 1 0"},
      {"{{ [1, 'a', none] | join(', ') }}|{{ x | join('-', attribute='n') }}", "{\"x\": [{\"n\": 1}, {\"n\": 2}]}",
       false, "1, a, None|1-2"},
      {"{{ x | map(attribute='n') | list }}|{{ ['a', 'b'] | map('upper') | join }}",
       "{\"x\": [{\"n\": 1}, {\"m\": 2}]}", false, "[1, Undefined]|AB"},
      {"{{ x | selectattr('t', 'equalto', 'f') | map(attribute='n') | join(',') }}|{{ x | rejectattr('t') | list | "
       "length }}",
       "{\"x\": [{\"t\": \"f\", \"n\": 1}, {\"t\": \"g\", \"n\": 2}, {\"n\": 3}]}", false, "1|1"},
      {"{% for k, v in x | items %}{{ k }}={{ v }};{% endfor %}", "{\"x\": {\"b\": 1, \"a\": [2]}}", false,
       "b=1;a=[2];"},
      {"{{ x | dictsort }}|{{ x | dictsort(reverse=true, by='value') }}", "{\"x\": {\"b\": 1, \"a\": 3, \"C\": 2}}",
       false, "[('a', 3), ('b', 1), ('C', 2)]|[('a', 3), ('C', 2), ('b', 1)]"},
      {"{{ x | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}|{{ none | default('d') }}", "{}",
       false, "d||d|None"},
      {"{{ 'a-b-a' | replace('a', 'x') }}|{{ 'a-b-a' | replace('a', 'x', 1) }}", "{}", false, "x-b-x|x-b-a"},
      {"{{ 'hello World' | upper }}|{{ 'HeLLo' | lower }}|{{ 'hello WORLD' | capitalize }}|{{ 'hello wOrld-foo (bar' | "
       "title }}",
       "{}", false, "HELLO WORLD|hello|Hello world|Hello World-Foo (Bar"},
      {"{{ 1 | string }}{{ none | string }}{{ [1, 'a'] | string }}|{{ '42' | int + 1 }}|{{ '4.7' | int }}|{{ 'x' | "
       "int(7) }}|{{ 3.9 | int }}|{{ '2.5' | float }}",
       "{}", false, "1None[1, 'a']|43|4|7|3|2.5"},
      {"{{ [3, 1, 2] | first }}{{ [3, 1, 2] | last }}{{ 'abc' | first }}|{{ [] | first }}|", "{}", false, "32a||"},
      {"{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, first=true) }}|{{ 'a\\n\\nb' | indent('> ', "
       "blank=true) }}",
       "{}", false, "a\n  b\n\n  c|  a\n  b|a\n> \n> b"},
      {"{{ '<b>' | safe }}|{{ '<b>' | e }}|{{ ('<' | safe) + '>' }}|{{ '<' + ('>' | safe) }}", "{}", false,
       "<b>|&lt;b&gt;|<&gt;|&lt;>"},
      {"{{ [1, 2, 1, 'A', 'a'] | unique | list }}|{{ [3, 1, 2] | reverse | list }}|{{ 'abc' | reverse }}", "{}", false,
       "[1, 2, 'A']|[2, 1, 3]|cba"},
      {"{{ ['b', 'A', 'c'] | sort }}|{{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}|{{ x | sort(attribute='n', "
       "reverse=true) | map(attribute='n') | list }}",
       "{\"x\": [{\"n\": 1}, {\"n\": 3}, {\"n\": 2}]}", false, "['A', 'b', 'c']|['A', 'b', 'c']|[3, 2, 1]"},
      {"{{ 'one two  three' | wordcount }}|{{ [1, 2, 3] | sum }}|{{ [4, 2, 9] | min }}{{ [4, 2, 9] | max }}|{{ -3 | "
       "abs }}|{{ 2.567 | round(1) }}",
       "{}", false, "3|6|29|3|2.6"},
      {"{{ x | list }}|{{ 'ab' | list }}|{{ {'a': 1} | list }}", "{\"x\": [1]}", false, "[1]|['a', 'b']|['a']"},
      {"{{ x | map('string') | tojson }}", "{\"x\": [1]}", true,
       "TypeError: Object of type generator is not JSON serializable"},
      {"{{ x | tojson }}", "{}", true, "TypeError: Object of type Undefined is not JSON serializable"},
      {"{% if false %}{{ 'a' | nosuchfilter }}{% endif %}ok", "{}", false, "ok"},
      {"{% filter upper %}abc {{ 'd' }}{% endfilter %}", "{}", false, "ABC D"},
  };
  for (const RenderCase& c : cases) check_case(c);
}
