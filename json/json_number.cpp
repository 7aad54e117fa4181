#include "json/json_number.hpp"

#include <charconv>
#include <cmath>

namespace specd {

void append_json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  if (value == 0) {
    out += '0';
    return;
  }
  const double magnitude = std::fabs(value);
  const bool plain = magnitude >= 1e-6 && magnitude < 1e21;
  char buffer[64];  // the longest forms: 21 integer digits, "-0.00000" and 17 digits
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value,
                                 plain ? std::chars_format::fixed : std::chars_format::scientific);
  std::string_view text(buffer, static_cast<size_t>(end - buffer));
  if (plain) {
    out += text;
    return;
  }
  // to_chars writes at least two exponent digits ("1e-07"); JavaScript writes "1e-7".
  const size_t e = text.find('e');
  out += text.substr(0, e + 2);
  std::string_view digits = text.substr(e + 2);
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  out += digits;
}

}  // namespace specd
