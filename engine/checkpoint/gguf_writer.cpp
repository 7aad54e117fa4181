#include "engine/checkpoint/gguf_writer.hpp"

#include <cstring>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

constexpr uint64_t kAlignment = 32;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

void put_string(std::string& out, std::string_view s) {
  put(out, uint64_t{s.size()});
  out.append(s);
}

// GGUF's value type ids.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

}  // namespace

void GgufWriter::key(std::string_view k, uint32_t type) {
  put_string(kv_, k);
  put(kv_, type);
  ++n_kv_;
}

GgufWriter& GgufWriter::u32(std::string_view k, uint32_t v) {
  key(k, kU32);
  put(kv_, v);
  return *this;
}
GgufWriter& GgufWriter::i32(std::string_view k, int32_t v) {
  key(k, kI32);
  put(kv_, v);
  return *this;
}
GgufWriter& GgufWriter::f32(std::string_view k, float v) {
  key(k, kF32);
  put(kv_, v);
  return *this;
}
GgufWriter& GgufWriter::boolean(std::string_view k, bool v) {
  key(k, kBool);
  put(kv_, uint8_t{v});
  return *this;
}
GgufWriter& GgufWriter::string(std::string_view k, std::string_view v) {
  key(k, kString);
  put_string(kv_, v);
  return *this;
}
GgufWriter& GgufWriter::strings(std::string_view k, const std::vector<std::string>& v) {
  key(k, kArray);
  put(kv_, kString);
  put(kv_, uint64_t{v.size()});
  for (const auto& s : v) put_string(kv_, s);
  return *this;
}
GgufWriter& GgufWriter::floats(std::string_view k, const std::vector<float>& v) {
  key(k, kArray);
  put(kv_, kF32);
  put(kv_, uint64_t{v.size()});
  for (float x : v) put(kv_, x);
  return *this;
}
GgufWriter& GgufWriter::i32s(std::string_view k, const std::vector<int32_t>& v) {
  key(k, kArray);
  put(kv_, kI32);
  put(kv_, uint64_t{v.size()});
  for (int32_t x : v) put(kv_, x);
  return *this;
}

void GgufWriter::declare_tensor(std::string name, std::vector<int64_t> dims, GgmlType type, size_t bytes) {
  tensors_.push_back({std::move(name), std::move(dims), type, bytes});
}

void GgufWriter::check_stream() const {
  if (!out_) throw SpecdError(ErrorCode::missing_file, "cannot write " + path_.string());
}

void GgufWriter::pad() {
  static const char zeros[kAlignment] = {};
  const uint64_t to = (position_ + kAlignment - 1) / kAlignment * kAlignment;
  out_.write(zeros, static_cast<std::streamsize>(to - position_));
  position_ = to;
}

void GgufWriter::begin(const std::filesystem::path& path) {
  path_ = path;
  std::string head;
  put(head, uint32_t{0x46554747});  // "GGUF"
  put(head, uint32_t{3});
  put(head, uint64_t{tensors_.size()});
  put(head, n_kv_);
  head += kv_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(head, t.name);
    put(head, uint32_t(t.dims.size()));
    for (int64_t d : t.dims) put(head, uint64_t(d));
    put(head, uint32_t(t.type));
    put(head, offset);
    offset += (t.bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  out_.open(path, std::ios::binary | std::ios::trunc);
  check_stream();
  out_.write(head.data(), static_cast<std::streamsize>(head.size()));
  position_ = head.size();
  pad();
  check_stream();
}

void GgufWriter::write_tensor(const std::byte* data, size_t bytes) {
  if (current_ >= tensors_.size() || written_ + bytes > tensors_[current_].bytes)
    throw SpecdError(ErrorCode::internal, path_.string() + ": more tensor bytes than declared");
  out_.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  position_ += bytes;
  written_ += bytes;
  if (written_ == tensors_[current_].bytes) {
    pad();
    ++current_;
    written_ = 0;
  }
  check_stream();
}

void GgufWriter::finish() {
  if (current_ != tensors_.size())
    throw SpecdError(ErrorCode::internal, path_.string() + ": tensor " + tensors_[current_].name + " was not written");
  out_.close();
  check_stream();
}

}  // namespace specd
