#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

namespace {

std::string located(const std::string& detail, int line) {
  return line > 0 ? "template line " + std::to_string(line) + ": " + detail : "template: " + detail;
}

}  // namespace

TemplateError::TemplateError(ErrorKind kind, std::string message, int line)
    : SpecdError(ErrorCode::invalid_argument, located(message, line)),
      kind_(kind),
      detail_(std::move(message)),
      line_(line) {}

std::string TemplateError::python_form() const {
  if (kind_ == ErrorKind::raised) return detail_;
  return std::string(error_kind_name(kind_)) + ": " + detail_;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::syntax:
      return "TemplateSyntaxError";
    case ErrorKind::undefined:
      return "UndefinedError";
    case ErrorKind::type:
      return "TypeError";
    case ErrorKind::value:
      return "ValueError";
    case ErrorKind::arithmetic:
      return "ZeroDivisionError";
    case ErrorKind::overflow:
      return "OverflowError";
    case ErrorKind::security:
      return "SecurityError";
    case ErrorKind::raised:
      return "TemplateError";
    case ErrorKind::runtime:
      return "TemplateRuntimeError";
    case ErrorKind::limit:
      return "LimitError";
  }
  return "TemplateError";
}

}  // namespace specd::jinja
