#include "engine/jinja/template.hpp"

#include <ctime>

#include "engine/jinja/parser.hpp"

namespace specd::jinja {

namespace {

std::tm local_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

}  // namespace

Template::Template(std::shared_ptr<const Body> body, TemplateOptions options)
    : body_(std::move(body)), options_(std::move(options)) {
  if (!options_.clock) options_.clock = local_now;
}

Template Template::compile(std::string_view source, TemplateOptions options) {
  auto body = std::make_shared<const Body>(parse(tokenize(source, options.lexer)));
  return Template(std::move(body), std::move(options));
}

std::string Template::render(const Value& variables) const {
  Renderer renderer(variables, options_.limits, options_.clock);
  return renderer.render(*body_);
}

}  // namespace specd::jinja
