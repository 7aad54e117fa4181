#pragma once
// Reading and writing the safetensors checkpoint format: an 8-byte little-endian header
// length N, N bytes of JSON header, then the tensor bytes (offsets relative to them).
// A SafetensorsFile is immutable after open; any thread may read it concurrently.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/mapped_file.hpp"

namespace specd {

// U8 holds the int8/int4 blocks of a quantized checkpoint (docs/quantized_checkpoint.md),
// never float weights.
enum class DType { F32, F16, BF16, U8 };

const char* dtype_name(DType dtype);  // "F32", "F16", "BF16", "U8" as in the header
size_t dtype_size(DType dtype);

// One tensor inside a mapped file. data points into the mapping and is not aligned:
// read it with memcpy or convert_to_float32.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const std::byte* data;
  size_t nbytes;
};

// A read-only memory mapping of one .safetensors file, validated on open.
// Movable, not copyable; TensorView pointers stay valid until the last owner is destroyed.
class SafetensorsFile {
 public:
  // Throws SpecdError: missing_file, truncated_file, malformed_json, missing_field,
  // bad_value, unsupported_dtype, shape_mismatch; each message names the file.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  bool contains(std::string_view name) const;
  // Throws SpecdError(missing_tensor) naming the file and the tensor.
  const TensorView& tensor(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;

  std::filesystem::path path_;
  MappedFile mapping_;
  std::map<std::string, TensorView, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

// One tensor's entry in a header being written: its bytes follow the previous entry's.
struct HeaderEntry {
  std::string_view name;
  DType dtype;
  std::span<const int64_t> shape;
  uint64_t bytes;
};

// The header text for tensors stored in the given order (metadata first when not empty),
// padded with spaces to a multiple of 8 bytes so the data stays aligned, as the
// reference implementation does. Names and shapes are the caller's to check.
std::string safetensors_header(std::span<const HeaderEntry> entries,
                               const std::map<std::string, std::string>& metadata);

// Writes tensors in the given order, header padded with spaces to a multiple of 8 bytes
// (as the reference implementation does). Writes a temp file in the same directory and
// renames it over path, so readers never see a partial file. Throws SpecdError:
// shape_mismatch (bytes vs shape), invalid_argument (duplicate or reserved name),
// missing_file (cannot create or write the file).
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// F32 copy, F16 and BF16 widened exactly; U8 throws SpecdError(unsupported_dtype).
// out must hold nbytes / dtype_size floats.
void convert_to_float32(const TensorView& t, float* out);
// F16 and BF16 round to nearest even (U8 throws); overflow gives inf, NaN stays NaN,
// F16 subnormals are produced, values below half the smallest subnormal become zero.
std::vector<std::byte> convert_from_float32(std::span<const float> in, DType to);

}  // namespace specd
