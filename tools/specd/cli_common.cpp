#include "tools/specd/cli_common.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/base/errors.hpp"

#include "json/json_serialize.hpp"
#include "net/data_dir.hpp"

namespace specd::cli {

std::filesystem::path default_models_dir() {
  if (const char* env = std::getenv("SPECD_MODELS_DIR"); env && *env) return env;
  return net::data_dir() / "models";
}

std::filesystem::path default_target_dir() { return default_models_dir() / "target"; }

std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int32_t id = 0;
    auto [next, ec] = std::from_chars(p, end, id);
    if (ec != std::errc() || id < 0 || (next != end && *next != ',')) {
      throw CLI::ValidationError("ids", "expected comma-separated non-negative integers, got '" + text + "'");
    }
    ids.push_back(id);
    p = next == end ? end : next + 1;
  }
  if (ids.empty()) throw CLI::ValidationError("ids", "the id list is empty");
  return ids;
}

void print_json(const boost::json::value& value) {
  std::string text = serialize_json(value);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace specd::cli
