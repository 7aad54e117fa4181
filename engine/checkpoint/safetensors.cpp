#include "engine/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value_from.hpp>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#include "engine/base/errors.hpp"
#include "engine/kernels/packed_weight.hpp"
#include "json/json_serialize.hpp"

namespace specd {

// safetensors is little-endian on disk; the header length and tensor bytes are used as is.
static_assert(std::endian::native == std::endian::little, "specd assumes a little-endian host");

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::U8:
      return "U8";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) { return dtype == DType::F32 ? 4 : dtype == DType::U8 ? 1 : 2; }

namespace {

using simdjson::dom::element;

// ---- Header parsing ----

struct ParsedHeader {
  std::map<std::string, TensorView, std::less<>> tensors;
  std::map<std::string, std::string> metadata;
};

// Validates one file's header; every error names the file.
class HeaderParser {
 public:
  HeaderParser(std::string file, const std::byte* base, size_t file_size)
      : file_(std::move(file)), base_(base), file_size_(file_size) {}

  ParsedHeader parse() {
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(std::to_integer<uint8_t>(base_[i])) << (8 * i);
    if (n > file_size_ - 8)
      fail(ErrorCode::truncated_file, "header length " + std::to_string(n) + " needs at least " +
                                          std::to_string(n + 8) + " bytes but the file has " +
                                          std::to_string(file_size_) + " bytes");
    buffer_ = base_ + 8 + n;
    buffer_size_ = file_size_ - 8 - n;
    element root;
    auto err = parser_.parse(reinterpret_cast<const char*>(base_ + 8), n).get(root);
    if (err) fail(ErrorCode::malformed_json, std::string("header is not valid JSON: ") + simdjson::error_message(err));
    simdjson::dom::object top;
    if (root.get_object().get(top)) fail(ErrorCode::malformed_json, "header is not a JSON object");
    ParsedHeader out;
    for (auto [key, value] : top) {
      if (key == "__metadata__") {
        out.metadata = parse_metadata(value);
      } else if (!out.tensors.emplace(std::string(key), parse_tensor(key, value)).second) {
        fail(ErrorCode::bad_value, "tensor '" + std::string(key) + "' appears twice in the header");
      }
    }
    return out;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& problem) const {
    throw SpecdError(code, file_ + ": " + problem);
  }

  std::map<std::string, std::string> parse_metadata(element value) const {
    simdjson::dom::object obj;
    if (value.get_object().get(obj)) fail(ErrorCode::bad_value, "__metadata__ is not an object");
    std::map<std::string, std::string> out;
    for (auto [key, v] : obj) {
      std::string_view text;
      if (v.get_string().get(text))
        fail(ErrorCode::bad_value, "__metadata__ value '" + std::string(key) + "' is not a string");
      out.emplace(key, text);
    }
    return out;
  }

  element field(simdjson::dom::object obj, std::string_view tensor, std::string_view key) const {
    element e;
    if (obj.at_key(key).get(e))
      fail(ErrorCode::missing_field, "tensor '" + std::string(tensor) + "' has no '" + std::string(key) + "'");
    return e;
  }

  std::vector<uint64_t> uint_array(element e, std::string_view tensor, std::string_view key) const {
    simdjson::dom::array arr;
    std::vector<uint64_t> out;
    bool ok = e.get_array().get(arr) == simdjson::SUCCESS;
    for (size_t i = 0; ok && i < arr.size(); ++i) {
      uint64_t v = 0;
      ok = arr.at(i).get_uint64().get(v) == simdjson::SUCCESS;
      out.push_back(v);
    }
    if (!ok)
      fail(ErrorCode::bad_value,
           "tensor '" + std::string(tensor) + "' " + std::string(key) + " is not an array of non-negative integers");
    return out;
  }

  DType parse_dtype(element e, std::string_view tensor) const {
    std::string_view s;
    if (e.get_string().get(s)) fail(ErrorCode::bad_value, "tensor '" + std::string(tensor) + "' dtype is not a string");
    if (s == "F32") return DType::F32;
    if (s == "F16") return DType::F16;
    if (s == "BF16") return DType::BF16;
    if (s == "U8") return DType::U8;
    fail(ErrorCode::unsupported_dtype, "tensor '" + std::string(tensor) + "' has dtype '" + std::string(s) +
                                           "'; specd reads only F32, F16, BF16 and U8 (quantized blocks)");
  }

  TensorView parse_tensor(std::string_view name, element value) const {
    const std::string tensor(name);
    simdjson::dom::object obj;
    if (value.get_object().get(obj)) fail(ErrorCode::bad_value, "tensor '" + tensor + "' is not an object");
    TensorView t{tensor, parse_dtype(field(obj, name, "dtype"), name), {}, nullptr, 0};
    uint64_t numel = 1;
    for (uint64_t d : uint_array(field(obj, name, "shape"), name, "shape")) {
      if (d > uint64_t(INT64_MAX) || __builtin_mul_overflow(numel, d, &numel))
        fail(ErrorCode::shape_mismatch, "tensor '" + tensor + "' shape is too large");
      t.shape.push_back(int64_t(d));
    }
    auto offsets = uint_array(field(obj, name, "data_offsets"), name, "data_offsets");
    if (offsets.size() != 2 || offsets[0] > offsets[1])
      fail(ErrorCode::bad_value, "tensor '" + tensor + "' data_offsets must be [begin, end] with begin <= end");
    const std::string span = "[" + std::to_string(offsets[0]) + ", " + std::to_string(offsets[1]) + "]";
    if (offsets[1] > buffer_size_)
      fail(ErrorCode::truncated_file, "tensor '" + tensor + "' data_offsets " + span + " end past the " +
                                          std::to_string(buffer_size_) + "-byte data buffer: expected at least " +
                                          std::to_string(file_size_ - buffer_size_ + offsets[1]) + " bytes, file has " +
                                          std::to_string(file_size_));
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, dtype_size(t.dtype), &expected) || expected != offsets[1] - offsets[0])
      fail(ErrorCode::shape_mismatch, "tensor '" + tensor + "' of " + dtype_name(t.dtype) + " shape with " +
                                          std::to_string(numel) + " elements needs " + std::to_string(expected) +
                                          " bytes but data_offsets " + span + " hold " +
                                          std::to_string(offsets[1] - offsets[0]));
    t.data = buffer_ + offsets[0];
    t.nbytes = offsets[1] - offsets[0];
    return t;
  }

  std::string file_;
  const std::byte* base_;
  size_t file_size_;
  const std::byte* buffer_ = nullptr;
  size_t buffer_size_ = 0;
  simdjson::dom::parser parser_;
};

// ---- Writing ----

// Throws shape_mismatch unless the shape fits t.bytes exactly.
void check_shape(const TensorToWrite& t, const std::string& file) {
  uint64_t numel = 1;
  bool ok = true;
  for (int64_t d : t.shape) ok = ok && d >= 0 && !__builtin_mul_overflow(numel, uint64_t(d), &numel);
  uint64_t nbytes = 0;
  ok = ok && !__builtin_mul_overflow(numel, dtype_size(t.dtype), &nbytes) && nbytes == t.bytes.size();
  if (!ok)
    throw SpecdError(ErrorCode::shape_mismatch, file + ": tensor '" + t.name + "' has " +
                                                    std::to_string(t.bytes.size()) + " bytes, which does not fit " +
                                                    dtype_name(t.dtype) + " shape " +
                                                    serialize_json(boost::json::array(t.shape.begin(), t.shape.end())));
}

std::string build_header(std::span<const TensorToWrite> tensors, const std::map<std::string, std::string>& metadata,
                         const std::string& file) {
  std::set<std::string_view> seen;
  std::vector<HeaderEntry> entries;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || !seen.insert(t.name).second)
      throw SpecdError(ErrorCode::invalid_argument, file + ": tensor name '" + t.name + "' is reserved or repeated");
    check_shape(t, file);
    entries.push_back({t.name, t.dtype, t.shape, t.bytes.size()});
  }
  return safetensors_header(entries, metadata);
}

bool write_all(int fd, const void* data, size_t size) {
  auto p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool write_file(const std::string& path, const std::string& header, std::span<const TensorToWrite> tensors) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  bool ok = write_all(fd, length, 8) && write_all(fd, header.data(), header.size());
  for (size_t i = 0; ok && i < tensors.size(); ++i)
    ok = write_all(fd, tensors[i].bytes.data(), tensors[i].bytes.size());
  ok = ok && ::fsync(fd) == 0;  // the rename must not publish a file whose bytes are not on disk
  return ::close(fd) == 0 && ok;
}

}  // namespace

std::string safetensors_header(std::span<const HeaderEntry> entries,
                               const std::map<std::string, std::string>& metadata) {
  boost::json::object header;
  if (!metadata.empty()) header["__metadata__"] = boost::json::value_from(metadata);
  uint64_t offset = 0;
  for (const HeaderEntry& e : entries) {
    header[e.name] = boost::json::object{{"dtype", dtype_name(e.dtype)},
                                         {"shape", boost::json::array(e.shape.begin(), e.shape.end())},
                                         {"data_offsets", boost::json::array{offset, offset + e.bytes}}};
    offset += e.bytes;
  }
  std::string text = serialize_json(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = MappedFile::open(path);
  const size_t size = file.mapping_.size();
  if (size < 8)
    throw SpecdError(ErrorCode::truncated_file,
                     name + ": file has " + std::to_string(size) + " bytes, expected at least 8 for the header length");
  ParsedHeader header = HeaderParser(name, file.mapping_.data(), size).parse();
  file.tensors_ = std::move(header.tensors);
  file.metadata_ = std::move(header.metadata);
  return file;
}

bool SafetensorsFile::contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

const TensorView& SafetensorsFile::tensor(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw SpecdError(ErrorCode::missing_tensor, path_.string() + ": no tensor named '" + std::string(name) + "'");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string name = path.string();
  const std::string header = build_header(tensors, metadata, name);
  static std::atomic<uint64_t> counter{0};
  // Same directory as the target, so the rename stays within one filesystem.
  const std::filesystem::path temp =
      path.parent_path() /
      ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
  const bool written = write_file(temp.string(), header, tensors);
  const int err = errno;
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int why = written ? errno : err;
    ::unlink(temp.c_str());
    throw SpecdError(ErrorCode::missing_file, name + ": cannot write: " + std::string(std::strerror(why)));
  }
}

namespace {

void check_float(DType dtype, const std::string& what) {
  if (dtype == DType::U8) {
    throw SpecdError(ErrorCode::unsupported_dtype, what + " is U8 (quantized blocks), not a float tensor");
  }
}

}  // namespace

void convert_to_float32(const TensorView& t, float* out) {
  check_float(t.dtype, "tensor " + t.name);
  const size_t count = t.nbytes / dtype_size(t.dtype);
  if (t.dtype == DType::F32) {
    std::memcpy(out, t.data, t.nbytes);
    return;
  }
  float (*widen)(uint16_t) = t.dtype == DType::F16 ? kernels::f16_to_float : kernels::bf16_to_float;
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, t.data + 2 * i, 2);  // tensor data need not be 2-byte aligned
    out[i] = widen(bits);
  }
}

std::vector<std::byte> convert_from_float32(std::span<const float> in, DType to) {
  check_float(to, "convert_from_float32's target");
  std::vector<std::byte> out(in.size() * dtype_size(to));
  if (to == DType::F32) {
    if (!in.empty()) std::memcpy(out.data(), in.data(), out.size());
    return out;
  }
  uint16_t (*narrow)(float) = to == DType::F16 ? kernels::float_to_f16 : kernels::float_to_bf16;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t bits = narrow(in[i]);
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

}  // namespace specd
