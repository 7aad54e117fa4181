#pragma once
// One template snippet, its variables (JSON) and what Jinja2 3.1 (in transformers'
// sandboxed environment) printed or raised for it: the expected strings in the jinja_*
// tests were produced by Jinja2 itself, so each CHECK compares with Jinja2, not with
// what the renderer happens to do.
#include <doctest/doctest.h>

#include <string>

#include "engine/jinja/json_input.hpp"
#include "engine/jinja/template.hpp"

namespace specd::jinja::testing {

struct RenderCase {
  const char* source;
  const char* variables;  // a JSON object
  bool error;             // Jinja2 raised: expected is "Class: message" (the message alone for raise_exception)
  const char* expected;
};

inline std::string render_or_error(const char* source, const char* variables) {
  try {
    return Template::compile(source).render(value_from_json(variables));
  } catch (const TemplateError& e) {
    return "error " + e.python_form();
  }
}

inline void check_case(const RenderCase& c) {
  INFO("template: " << c.source);
  const std::string got = render_or_error(c.source, c.variables);
  CHECK(got == (c.error ? "error " : "") + std::string(c.expected));
}

}  // namespace specd::jinja::testing
