#pragma once
// Tokens to a statement tree, by recursive descent over Jinja2's grammar (the same
// operator precedence and the same tags, as far as chat templates use them).
#include <vector>

#include "engine/jinja/ast.hpp"
#include "engine/jinja/lexer.hpp"

namespace specd::jinja {

// Throws TemplateError(syntax) with the line of the offending token.
Body parse(std::vector<Token> tokens);

}  // namespace specd::jinja
