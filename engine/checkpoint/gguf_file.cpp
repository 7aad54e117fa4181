#include "engine/checkpoint/gguf_file.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxNesting = 8;           // arrays of arrays; the format allows it, files do not need more

struct TypeSize {
  uint32_t type;
  const char* name;
  int64_t block;  // elements a block
  size_t bytes;   // bytes a block
};

// ggml's types (ggml.c type_traits): enough to bounds-check every tensor a file may hold.
constexpr TypeSize kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

const TypeSize* type_size(uint32_t type) {
  for (const TypeSize& t : kTypes)
    if (t.type == type) return &t;
  return nullptr;
}

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
      return 1;
    case GgufType::u16:
    case GgufType::i16:
      return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
      return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
      return 8;
    case GgufType::string:
      return 8;  // at least its length
    case GgufType::array:
      return 12;  // at least its element type and count
  }
  return 0;
}

// Reads the header at the front of a mapping; every read is checked against its end.
class HeaderReader {
 public:
  HeaderReader(std::string name, const std::byte* data, size_t size) : name_(std::move(name)), p_(data), size_(size) {}

  [[noreturn]] void fail(ErrorCode code, const std::string& problem) const {
    throw SpecdError(code, name_ + ": " + problem);
  }
  size_t pos() const { return pos_; }

  void need(size_t n, const char* what) {
    if (n > size_ - pos_) {
      fail(ErrorCode::truncated_file, std::string(what) + " at byte " + std::to_string(pos_) + " needs " +
                                          std::to_string(n) + " bytes, the file has " + std::to_string(size_ - pos_) +
                                          " left (truncated?)");
    }
  }
  template <class T>
  T scalar(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string string(const char* what) {
    const uint64_t n = scalar<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  GgufType value_type(const std::string& key) {
    const uint32_t t = scalar<uint32_t>("a value type");
    if (t > static_cast<uint32_t>(GgufType::f64))
      fail(ErrorCode::bad_value, "key '" + key + "' has unknown value type " + std::to_string(t));
    return static_cast<GgufType>(t);
  }

  GgufValue value(GgufType type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case GgufType::u8:
        v.value = uint64_t{scalar<uint8_t>("a u8 value")};
        break;
      case GgufType::u16:
        v.value = uint64_t{scalar<uint16_t>("a u16 value")};
        break;
      case GgufType::u32:
        v.value = uint64_t{scalar<uint32_t>("a u32 value")};
        break;
      case GgufType::u64:
        v.value = scalar<uint64_t>("a u64 value");
        break;
      case GgufType::i8:
        v.value = int64_t{scalar<int8_t>("an i8 value")};
        break;
      case GgufType::i16:
        v.value = int64_t{scalar<int16_t>("an i16 value")};
        break;
      case GgufType::i32:
        v.value = int64_t{scalar<int32_t>("an i32 value")};
        break;
      case GgufType::i64:
        v.value = scalar<int64_t>("an i64 value");
        break;
      case GgufType::f32:
        v.value = double{scalar<float>("an f32 value")};
        break;
      case GgufType::f64:
        v.value = scalar<double>("an f64 value");
        break;
      case GgufType::boolean: {
        const uint8_t b = scalar<uint8_t>("a bool value");
        if (b > 1) fail(ErrorCode::bad_value, "key '" + key + "' has bool value " + std::to_string(b));
        v.value = b == 1;
        break;
      }
      case GgufType::string:
        v.value = string("a string value");
        break;
      case GgufType::array:
        v.value = array(key, depth);
        break;
    }
    return v;
  }

  GgufArray array(const std::string& key, int depth) {
    if (depth >= kMaxNesting) fail(ErrorCode::bad_value, "key '" + key + "' nests arrays too deeply");
    GgufArray a;
    a.element_type = value_type(key);
    const uint64_t count = scalar<uint64_t>("an array length");
    // Each element takes at least scalar_size bytes: a count beyond the file is a lie,
    // caught before anything is allocated for it.
    if (count > (size_ - pos_) / scalar_size(a.element_type))
      fail(ErrorCode::truncated_file, "key '" + key + "' is an array of " + std::to_string(count) + " " +
                                          gguf_type_name(a.element_type) + " values, more than the " +
                                          std::to_string(size_ - pos_) + " bytes left in the file hold");
    a.items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) a.items.push_back(value(a.element_type, key, depth + 1));
    return a;
  }

 private:
  std::string name_;
  const std::byte* p_;
  size_t size_;
  size_t pos_ = 0;
};

GgufTensor read_tensor_info(HeaderReader& r) {
  GgufTensor t;
  t.name = r.string("a tensor name");
  const uint32_t n_dims = r.scalar<uint32_t>("a tensor's dimension count");
  if (n_dims == 0 || n_dims > kMaxDims)
    r.fail(ErrorCode::bad_value,
           "tensor " + t.name + " has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t ne = r.scalar<uint64_t>("a tensor dimension");
    if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      r.fail(ErrorCode::bad_value,
             "tensor " + t.name + " has dimension " + std::to_string(d) + " of " + std::to_string(ne));
    t.dims.push_back(static_cast<int64_t>(ne));
  }
  t.type = r.scalar<uint32_t>("a tensor type");
  t.offset = r.scalar<uint64_t>("a tensor offset");
  return t;
}

// The tensor's size from its type, every multiplication checked: a malformed file must
// not wrap a size around and pass the bounds check.
void size_tensor(const HeaderReader& r, GgufTensor& t) {
  const TypeSize* ts = type_size(t.type);
  if (!ts) return;  // unknown: the loader refuses it by name if it asks for it
  if (t.dims[0] % ts->block != 0)
    r.fail(ErrorCode::shape_mismatch, "tensor " + t.name + " of type " + ts->name +
                                          " has ne[0] = " + std::to_string(t.dims[0]) +
                                          ", not a multiple of its block of " + std::to_string(ts->block));
  uint64_t bytes = static_cast<uint64_t>(t.dims[0] / ts->block) * ts->bytes;
  for (size_t d = 1; d < t.dims.size(); ++d) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(t.dims[d]), &bytes))
      r.fail(ErrorCode::bad_value, "tensor " + t.name + " is too large");
  }
  t.nbytes = bytes;
}

}  // namespace

bool is_gguf_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".gguf";
}

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::u8:
      return "u8";
    case GgufType::i8:
      return "i8";
    case GgufType::u16:
      return "u16";
    case GgufType::i16:
      return "i16";
    case GgufType::u32:
      return "u32";
    case GgufType::i32:
      return "i32";
    case GgufType::f32:
      return "f32";
    case GgufType::boolean:
      return "bool";
    case GgufType::string:
      return "string";
    case GgufType::array:
      return "array";
    case GgufType::u64:
      return "u64";
    case GgufType::i64:
      return "i64";
    case GgufType::f64:
      return "f64";
  }
  return "unknown";
}

std::string ggml_type_name(uint32_t type) {
  if (const TypeSize* t = type_size(type)) return t->name;
  return "type " + std::to_string(type);
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  GgufFile file;
  file.path_ = path;
  file.mapping_ = MappedFile::open(path);
  const size_t size = file.mapping_.size();
  if (size == 0) throw SpecdError(ErrorCode::truncated_file, name + ": file is empty");

  const std::byte* bytes = file.mapping_.data();
  HeaderReader r(name, bytes, size);
  const uint32_t magic = r.scalar<uint32_t>("the magic");
  if (magic != kMagic) r.fail(ErrorCode::bad_value, "not a GGUF file (the magic is not \"GGUF\")");
  file.version_ = r.scalar<uint32_t>("the version");
  if (file.version_ != 2 && file.version_ != 3) {
    // A big-endian file's version reads byte-swapped here.
    if (file.version_ >= (1u << 16)) r.fail(ErrorCode::bad_value, "a big-endian GGUF file; specd reads little-endian");
    r.fail(ErrorCode::bad_value, "GGUF version " + std::to_string(file.version_) + "; specd reads versions 2 and 3");
  }
  const uint64_t n_tensors = r.scalar<uint64_t>("the tensor count");
  const uint64_t n_kv = r.scalar<uint64_t>("the metadata count");
  // Every key/value takes at least 12 bytes, every tensor info at least 28.
  if (n_kv > size / 12 || n_tensors > size / 28)
    r.fail(ErrorCode::truncated_file, "the header declares " + std::to_string(n_tensors) + " tensors and " +
                                          std::to_string(n_kv) + " metadata keys, more than a file of " +
                                          std::to_string(size) + " bytes holds (truncated?)");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("a metadata key");
    const GgufType type = r.value_type(key);
    GgufValue value = r.value(type, key, 0);
    if (!file.metadata_.emplace(key, std::move(value)).second)
      r.fail(ErrorCode::bad_value, "metadata key '" + key + "' appears twice");
  }
  if (const GgufValue* a = file.find("general.alignment")) {
    const auto* v = std::get_if<uint64_t>(&a->value);
    if (!v || *v == 0 || (*v & (*v - 1)) != 0 || *v > (1u << 20))
      r.fail(ErrorCode::bad_value, "general.alignment must be a power of two");
    file.alignment_ = *v;
  }
  file.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    file.tensors_.push_back(read_tensor_info(r));
    if (!file.by_name_.emplace(file.tensors_.back().name, i).second)
      r.fail(ErrorCode::bad_value, "tensor " + file.tensors_.back().name + " appears twice");
  }
  file.data_offset_ = (r.pos() + file.alignment_ - 1) / file.alignment_ * file.alignment_;
  const uint64_t data_bytes = size >= file.data_offset_ ? size - file.data_offset_ : 0;
  for (GgufTensor& t : file.tensors_) {
    size_tensor(r, t);
    if (t.offset % file.alignment_ != 0)
      r.fail(ErrorCode::bad_value, "tensor " + t.name + " starts at data offset " + std::to_string(t.offset) +
                                       ", not a multiple of the alignment " + std::to_string(file.alignment_));
    if (t.offset > data_bytes || t.nbytes > data_bytes - t.offset)
      r.fail(ErrorCode::truncated_file, "tensor " + t.name + " (" + std::to_string(t.nbytes) +
                                            " bytes at data offset " + std::to_string(t.offset) +
                                            ") reaches past the end of the file (" + std::to_string(data_bytes) +
                                            " data bytes; truncated?)");
    t.data = bytes + file.data_offset_ + t.offset;
  }
  return file;
}

void GgufFile::release(const GgufTensor& tensor) const { release_pages(tensor.data, tensor.nbytes); }

}  // namespace specd
