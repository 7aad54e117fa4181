#include "engine/base/byte_size.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

int64_t parse_byte_size(std::string_view text, const std::string& what) {
  auto bad = [&] {
    throw SpecdError(ErrorCode::bad_value, what + ": '" + std::string(text) +
                                               "' is not a byte size (a number with an optional unit: B, KiB, "
                                               "MiB, GiB, TiB, kB, MB, GB, TB)");
  };
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) bad();
  std::string_view rest = text.substr(first);
  double number = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (ec != std::errc() || !std::isfinite(number) || number < 0) bad();
  std::string unit = lower(std::string_view(end, rest.data() + rest.size() - end));
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},     {"b", 1},    {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}, {"kb", 1e3},
      {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},    {"k", 0x1p10},   {"m", 0x1p20},   {"g", 0x1p30},   {"t", 0x1p40},
  };
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::round(number * scale);
    if (bytes > 0x1p62) bad();
    return static_cast<int64_t>(bytes);
  }
  bad();
  return 0;
}

std::string format_bytes(int64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", v, kUnits[unit]);
  return text;
}

}  // namespace specd
