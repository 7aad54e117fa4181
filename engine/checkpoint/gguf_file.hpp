#pragma once
// Reading llama.cpp's GGUF files (versions 2 and 3, little-endian): a header, typed
// metadata key/values, tensor infos, then the tensor data at general.alignment. The file
// is memory-mapped and validated on open: every length, count, dimension and offset is
// checked against the file, so a truncated or malformed file is a SpecdError naming it.
// Immutable after open; any thread may read it concurrently.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/checkpoint/mapped_file.hpp"

namespace specd {

// True for a path naming a .gguf file: load_model, load_tokenizer and the chat template
// take one in place of a model directory.
bool is_gguf_path(const std::filesystem::path& path);

// GGUF's metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue;
struct GgufArray {
  GgufType element_type = GgufType::u8;
  std::vector<GgufValue> items;
};

// One metadata value: unsigned integers as uint64_t, signed as int64_t, floats as
// double, and the type it had in the file.
struct GgufValue {
  GgufType type = GgufType::u8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

// ggml's tensor types that specd names (ids as in ggml.h); any other id is kept as is.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  bf16 = 30,
};
// "F16", "Q4_K", ...; "type 99" for an id ggml does not define.
std::string ggml_type_name(uint32_t type);

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // ne[0] first: ne[0] is the innermost (input) dimension
  uint32_t type = 0;          // a GgmlType id
  uint64_t offset = 0;        // relative to the data section
  const std::byte* data = nullptr;
  size_t nbytes = 0;  // 0 when the type is unknown to specd (its size cannot be checked)
  int64_t elements() const;
};

class GgufFile {
 public:
  // Throws SpecdError: missing_file (absent, unreadable), bad_value (wrong magic,
  // version, big-endian file, bad alignment or type), truncated_file (a length, count or
  // tensor reaching past the end), shape_mismatch (dimensions a tensor's type cannot
  // hold); each message names the file.
  static GgufFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data in the file
  size_t file_bytes() const { return mapping_.size(); }

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  // Typed reads; a missing key (without fallback) is missing_field, a value of another
  // type bad_value, both naming the file and the key. Any integer type is accepted where
  // its value fits.
  uint64_t uint_value(std::string_view key) const;
  std::optional<uint64_t> uint_value(std::string_view key, std::optional<uint64_t> fallback) const;
  double float_value(std::string_view key) const;  // f32, f64 or an integer
  std::optional<double> float_value(std::string_view key, std::optional<double> fallback) const;
  bool bool_value(std::string_view key, bool fallback) const;
  std::string string_value(std::string_view key) const;
  std::optional<std::string> string_value(std::string_view key, std::optional<std::string> fallback) const;
  std::vector<std::string> strings(std::string_view key) const;
  std::vector<float> floats(std::string_view key) const;
  std::vector<int64_t> ints(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  // Drops a tensor's pages from the resident set once it has been copied out.
  void release(const GgufTensor& tensor) const;

 private:
  GgufFile() = default;
  [[noreturn]] void fail_key(std::string_view key, const std::string& problem) const;
  const GgufArray& array(std::string_view key) const;

  std::filesystem::path path_;
  MappedFile mapping_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

}  // namespace specd
