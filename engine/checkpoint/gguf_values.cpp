// GgufFile's typed reads of metadata values: each names the file and the key when the
// value is missing or of another type.
#include <limits>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"

namespace specd {

void GgufFile::fail_key(std::string_view key, const std::string& problem) const {
  const ErrorCode code = find(key) ? ErrorCode::bad_value : ErrorCode::missing_field;
  throw SpecdError(code, path_.string() + ": metadata key '" + std::string(key) + "' " + problem);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::optional<uint64_t> GgufFile::uint_value(std::string_view key, std::optional<uint64_t> fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (const auto* u = std::get_if<uint64_t>(&v->value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v->value); i && *i >= 0) return static_cast<uint64_t>(*i);
  fail_key(key, std::string("must be a non-negative integer, got ") + gguf_type_name(v->type));
}

uint64_t GgufFile::uint_value(std::string_view key) const {
  if (auto v = uint_value(key, std::nullopt)) return *v;
  fail_key(key, "is missing");
}

std::optional<double> GgufFile::float_value(std::string_view key, std::optional<double> fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (const auto* d = std::get_if<double>(&v->value)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&v->value)) return static_cast<double>(*i);
  fail_key(key, std::string("must be a number, got ") + gguf_type_name(v->type));
}

double GgufFile::float_value(std::string_view key) const {
  if (auto v = float_value(key, std::nullopt)) return *v;
  fail_key(key, "is missing");
}

bool GgufFile::bool_value(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (const auto* b = std::get_if<bool>(&v->value)) return *b;
  fail_key(key, std::string("must be a bool, got ") + gguf_type_name(v->type));
}

std::optional<std::string> GgufFile::string_value(std::string_view key, std::optional<std::string> fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  fail_key(key, std::string("must be a string, got ") + gguf_type_name(v->type));
}

std::string GgufFile::string_value(std::string_view key) const {
  if (auto v = string_value(key, std::nullopt)) return *v;
  fail_key(key, "is missing");
}

const GgufArray& GgufFile::array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) fail_key(key, "is missing");
  if (const auto* a = std::get_if<GgufArray>(&v->value)) return *a;
  fail_key(key, std::string("must be an array, got ") + gguf_type_name(v->type));
}

std::vector<std::string> GgufFile::strings(std::string_view key) const {
  const GgufArray& a = array(key);
  if (a.element_type != GgufType::string)
    fail_key(key, std::string("must be an array of strings, got one of ") + gguf_type_name(a.element_type));
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) out.push_back(std::get<std::string>(v.value));
  return out;
}

std::vector<float> GgufFile::floats(std::string_view key) const {
  const GgufArray& a = array(key);
  if (a.element_type != GgufType::f32 && a.element_type != GgufType::f64)
    fail_key(key, std::string("must be an array of floats, got one of ") + gguf_type_name(a.element_type));
  std::vector<float> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) out.push_back(static_cast<float>(std::get<double>(v.value)));
  return out;
}

std::vector<int64_t> GgufFile::ints(std::string_view key) const {
  const GgufArray& a = array(key);
  std::vector<int64_t> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) {
    if (const auto* i = std::get_if<int64_t>(&v.value)) {
      out.push_back(*i);
    } else if (const auto* u = std::get_if<uint64_t>(&v.value);
               u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out.push_back(static_cast<int64_t>(*u));
    } else {
      fail_key(key, std::string("must be an array of integers, got one of ") + gguf_type_name(a.element_type));
    }
  }
  return out;
}

}  // namespace specd
