#pragma once
// What a template that cannot compile or render raises: the Jinja2 exception class it
// corresponds to, Jinja2's message, and the template line. A SpecdError with code
// invalid_argument, so a request whose template refuses it is a client error.
#include <string>

#include "engine/base/errors.hpp"

namespace specd::jinja {

enum class ErrorKind {
  syntax,      // TemplateSyntaxError: the template does not parse
  undefined,   // UndefinedError: an undefined value used beyond printing or testing
  type,        // TypeError: an operation on values of the wrong type
  value,       // ValueError / IndexError: the right type with a wrong value
  arithmetic,  // ZeroDivisionError
  overflow,    // OverflowError: a range larger than the sandbox allows
  security,    // SecurityError: the sandbox refused an attribute (list.append, ...)
  raised,      // the template's own raise_exception(message)
  runtime,     // TemplateRuntimeError: unknown filter or test, and the like
  limit,       // a configured limit (loop iterations, recursion, output size) was hit
};

class TemplateError : public SpecdError {
 public:
  TemplateError(ErrorKind kind, std::string message, int line = 0);

  ErrorKind kind() const { return kind_; }
  int line() const { return line_; }
  // Jinja2's message alone: for raise_exception, exactly the template's text.
  const std::string& detail() const { return detail_; }
  // "UndefinedError: 'x' is undefined", as Python prints the exception.
  std::string python_form() const;
  // A template error raised deeper than the statement that knows its line gets it here.
  TemplateError with_line(int line) const { return TemplateError(kind_, detail_, line); }

 private:
  ErrorKind kind_;
  std::string detail_;
  int line_;
};

const char* error_kind_name(ErrorKind kind);

}  // namespace specd::jinja
