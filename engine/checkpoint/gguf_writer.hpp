#pragma once
// Writes a GGUF file (version 3, little-endian, 32-byte alignment) as llama.cpp's tools
// do: metadata, then the tensor infos, then each tensor's bytes streamed in the order
// they were declared, so a multi-GB model never sits in memory whole. One thread.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/gguf_file.hpp"

namespace specd {

class GgufWriter {
 public:
  GgufWriter& u32(std::string_view key, uint32_t v);
  GgufWriter& i32(std::string_view key, int32_t v);
  GgufWriter& f32(std::string_view key, float v);
  GgufWriter& boolean(std::string_view key, bool v);
  GgufWriter& string(std::string_view key, std::string_view v);
  GgufWriter& strings(std::string_view key, const std::vector<std::string>& v);
  GgufWriter& floats(std::string_view key, const std::vector<float>& v);
  GgufWriter& i32s(std::string_view key, const std::vector<int32_t>& v);

  // A tensor whose `bytes` come later through write_tensor; dims with ne[0] (the input
  // dimension) first.
  void declare_tensor(std::string name, std::vector<int64_t> dims, GgmlType type, size_t bytes);

  // Writes the header, the metadata and the tensor infos to `path`. Throws
  // SpecdError(missing_file) when the file cannot be written.
  void begin(const std::filesystem::path& path);
  // The next declared tensor's bytes, in pieces that add up to its declared size.
  void write_tensor(const std::byte* data, size_t bytes);
  // Checks every declared tensor was written in full, then closes the file.
  void finish();

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    size_t bytes;
  };
  void key(std::string_view k, uint32_t type);
  void pad();
  void check_stream() const;

  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
  std::filesystem::path path_;
  std::ofstream out_;
  size_t current_ = 0, written_ = 0;  // the tensor being written, and its bytes so far
  uint64_t position_ = 0;
};

}  // namespace specd
