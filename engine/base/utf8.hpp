#pragma once
// The UTF-8 encoding of one code point, shared by the tokenizers and the Jinja renderer.
#include <string>

namespace specd {

void append_utf8(std::string& out, char32_t code_point);
inline std::string utf8_encode(char32_t code_point) {
  std::string out;
  append_utf8(out, code_point);
  return out;
}

}  // namespace specd
