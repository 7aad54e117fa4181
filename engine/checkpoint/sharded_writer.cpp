#include "engine/checkpoint/sharded_writer.hpp"

#include <unistd.h>
#include <boost/json/object.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "engine/base/errors.hpp"
#include "json/json_serialize.hpp"

namespace specd {

namespace fs = std::filesystem;

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr int64_t kChunkElements = int64_t(1) << 22;  // 16 MiB of float32 per chunk

struct Shard {
  std::vector<size_t> tensors;  // indices into the caller's list
  uint64_t bytes = 0;
};

std::vector<Shard> plan_shards(std::span<const TensorSpec> tensors, DType storage, uint64_t max_bytes) {
  std::vector<Shard> shards(1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t bytes = uint64_t(tensors[i].numel()) * dtype_size(tensors[i].stored_as(storage));
    if (!shards.back().tensors.empty() && shards.back().bytes + bytes > max_bytes) shards.emplace_back();
    shards.back().tensors.push_back(i);
    shards.back().bytes += bytes;
  }
  return shards;
}

std::string header_for(std::span<const TensorSpec> tensors, const Shard& shard, DType storage) {
  std::vector<HeaderEntry> entries;
  for (size_t i : shard.tensors) {
    const TensorSpec& t = tensors[i];
    const DType dtype = t.stored_as(storage);
    entries.push_back({t.name, dtype, t.shape, uint64_t(t.numel()) * dtype_size(dtype)});
  }
  return safetensors_header(entries, {{"format", "pt"}});
}

class FileSink {
 public:
  explicit FileSink(const fs::path& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) fail();
  }
  void write(const void* data, size_t size) {
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out_) fail();
  }
  void close() {
    out_.close();
    if (!out_) fail();
  }

 private:
  [[noreturn]] void fail() const {
    throw SpecdError(ErrorCode::missing_file, path_.string() + ": cannot write: " + std::strerror(errno));
  }
  fs::path path_;
  std::ofstream out_;
};

void write_shard(const fs::path& path, std::span<const TensorSpec> tensors, const Shard& shard, DType storage,
                 const TensorFill& fill, const std::function<void(uint64_t)>& progress) {
  const fs::path temp = path.parent_path() / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()));
  try {
    FileSink sink(temp);
    const std::string header = header_for(tensors, shard, storage);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
    sink.write(length, 8);
    sink.write(header.data(), header.size());
    std::vector<float> chunk;
    for (size_t i : shard.tensors) {
      const int64_t n = tensors[i].numel();
      for (int64_t first = 0; first < n; first += kChunkElements) {
        chunk.resize(static_cast<size_t>(std::min(kChunkElements, n - first)));
        fill(tensors[i], first, chunk);
        const std::vector<std::byte> bytes = convert_from_float32(chunk, tensors[i].stored_as(storage));
        sink.write(bytes.data(), bytes.size());
        if (progress) progress(bytes.size());
      }
    }
    sink.close();
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
  fs::rename(temp, path);
}

void write_index(const fs::path& dir, std::span<const TensorSpec> tensors, const std::vector<Shard>& shards,
                 const std::vector<fs::path>& files, uint64_t total) {
  std::map<std::string, std::string> weight_map;  // sorted by name, as transformers writes it
  for (size_t s = 0; s < shards.size(); ++s)
    for (size_t i : shards[s].tensors) weight_map[tensors[i].name] = files[s].filename().string();
  const boost::json::object index{{"metadata", boost::json::object{{"total_size", total}}},
                                  {"weight_map", boost::json::value_from(weight_map)}};
  std::ofstream out(dir / "model.safetensors.index.json");
  out << serialize_json_indented(index) << "\n";
  if (!out)
    throw SpecdError(ErrorCode::missing_file, (dir / "model.safetensors.index.json").string() + ": cannot write");
}

}  // namespace

WrittenWeights write_weights_streaming(const fs::path& dir, std::span<const TensorSpec> tensors, DType storage,
                                       uint64_t max_shard_bytes, const TensorFill& fill,
                                       const std::function<void(uint64_t)>& progress) {
  std::set<std::string_view> seen;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !seen.insert(t.name).second)
      throw SpecdError(ErrorCode::invalid_argument, "tensor name '" + t.name + "' is empty, reserved or repeated");
  }
  fs::create_directories(dir);
  const std::vector<Shard> shards = plan_shards(tensors, storage, max_shard_bytes);
  WrittenWeights out;
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    out.files.push_back(dir / (shards.size() == 1 ? std::string("model.safetensors") : std::string(name)));
    write_shard(out.files.back(), tensors, shards[s], storage, fill, progress);
    out.tensor_bytes += shards[s].bytes;
  }
  if (shards.size() > 1) {
    write_index(dir, tensors, shards, out.files, out.tensor_bytes);
  } else {
    std::error_code ec;  // a stale index would take precedence over the new single file
    fs::remove(dir / "model.safetensors.index.json", ec);
  }
  return out;
}

}  // namespace specd
