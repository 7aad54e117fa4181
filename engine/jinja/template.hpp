#pragma once
// Chat templates as models ship them: a Jinja2 interpreter for the subset chat
// templates use, rendering byte for byte as transformers' apply_chat_template does
// (Jinja2 3.1 in an ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks,
// loop controls, {% generation %}, json.dumps-style tojson, raise_exception and
// strftime_now). Hand-written because Debian packages no C++ Jinja library; embedding
// Python's Jinja2 would put an interpreter on the request path.
//
// Sandboxed by construction: a template sees only the variables it is given and the
// globals of globals.hpp, cannot modify lists or dicts, and runs under limits on loop
// iterations, macro recursion and output size. A Template is immutable once compiled;
// render may be called from any number of threads at once.
#include <memory>
#include <string>
#include <string_view>

#include "engine/jinja/ast.hpp"
#include "engine/jinja/lexer.hpp"
#include "engine/jinja/renderer.hpp"
#include "engine/jinja/template_error.hpp"
#include "engine/jinja/value.hpp"

namespace specd::jinja {

struct TemplateOptions {
  LexerOptions lexer;
  RenderLimits limits;
  Clock clock;  // empty: the local time when strftime_now is called
};

class Template {
 public:
  // Throws TemplateError(syntax) naming the line.
  static Template compile(std::string_view source, TemplateOptions options = {});

  // Renders with `variables` (a dict: messages, tools, add_generation_prompt, ...).
  // Throws TemplateError: the template's raise_exception, undefined values used,
  // type errors, sandbox refusals and limits, each with the template line.
  std::string render(const Value& variables) const;

 private:
  Template(std::shared_ptr<const Body> body, TemplateOptions options);

  std::shared_ptr<const Body> body_;
  TemplateOptions options_;
};

}  // namespace specd::jinja
