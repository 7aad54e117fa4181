#pragma once
// Writes small GGUF files (version 3, little-endian) for the GGUF tests: metadata of any
// type and tensors given as raw bytes. Header-only; tests only.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace specd::testing {

class GgufWriter {
 public:
  GgufWriter& u32(std::string_view key, uint32_t v) { return scalar(key, 4, v); }
  GgufWriter& i32(std::string_view key, int32_t v) { return scalar(key, 5, v); }
  GgufWriter& f32(std::string_view key, float v) { return scalar(key, 6, v); }
  GgufWriter& boolean(std::string_view key, bool v) { return scalar(key, 7, uint8_t{v}); }
  GgufWriter& u64(std::string_view key, uint64_t v) { return scalar(key, 10, v); }
  GgufWriter& string(std::string_view key, std::string_view v) {
    begin(key, 8);
    put_string(kv_, v);
    return *this;
  }
  GgufWriter& strings(std::string_view key, const std::vector<std::string>& v) {
    begin(key, 9);
    put(kv_, uint32_t{8});
    put(kv_, uint64_t{v.size()});
    for (const auto& s : v) put_string(kv_, s);
    return *this;
  }
  GgufWriter& floats(std::string_view key, const std::vector<float>& v) { return array(key, 6, v); }
  GgufWriter& i32s(std::string_view key, const std::vector<int32_t>& v) { return array(key, 5, v); }
  // dims with ne[0] (the innermost dimension) first; bytes as the type stores them.
  GgufWriter& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, std::string bytes) {
    tensors_.push_back({std::string(name), std::move(dims), type, std::move(bytes)});
    return *this;
  }

  std::string bytes(uint64_t alignment = 32) const {
    std::string out;
    put(out, uint32_t{0x46554747});
    put(out, uint32_t{3});
    put(out, uint64_t{tensors_.size()});
    put(out, n_kv_);
    out += kv_;
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      put_string(out, t.name);
      put(out, uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) put(out, d);
      put(out, t.type);
      put(out, offset);
      offset += (t.bytes.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    for (const auto& t : tensors_) {
      out += t.bytes;
      out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    }
    return out;
  }
  void write(const std::filesystem::path& path) const { write_bytes(path, bytes()); }

  static void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string bytes;
  };
  template <class T>
  static void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    out.append(b, sizeof b);
  }
  static void put_string(std::string& out, std::string_view s) {
    put(out, uint64_t{s.size()});
    out.append(s);
  }
  void begin(std::string_view key, uint32_t type) {
    put_string(kv_, key);
    put(kv_, type);
    ++n_kv_;
  }
  template <class T>
  GgufWriter& scalar(std::string_view key, uint32_t type, T v) {
    begin(key, type);
    put(kv_, v);
    return *this;
  }
  template <class T>
  GgufWriter& array(std::string_view key, uint32_t type, const std::vector<T>& v) {
    begin(key, 9);
    put(kv_, type);
    put(kv_, uint64_t{v.size()});
    for (T x : v) put(kv_, x);
    return *this;
  }

  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace specd::testing
