#include "json/json_number.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

namespace specd {

namespace {

// Shortest round-trip digits in the given layout; scientific writes at least two exponent digits.
std::string_view shortest(char (&buffer)[64], double value, std::chars_format format) {
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, format);
  return {buffer, static_cast<size_t>(end - buffer)};
}

}  // namespace

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
  const std::string_view text =
      shortest(buffer, value, plain ? std::chars_format::fixed : std::chars_format::scientific);
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

double round_to(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

void append_python_float(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";  // Python would write NaN or Infinity, which JSON readers refuse
    return;
  }
  const double magnitude = std::fabs(value);
  const bool fixed = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16);
  char buffer[64];
  const std::string_view text =
      shortest(buffer, value, fixed ? std::chars_format::fixed : std::chars_format::scientific);
  out += text;  // scientific already matches repr: "1e-05", "1.5e+16"
  if (fixed && text.find('.') == std::string_view::npos) out += ".0";
}

}  // namespace specd
