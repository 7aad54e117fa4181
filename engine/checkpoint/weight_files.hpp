#pragma once
// The weight files of a Hugging Face model directory: either one model.safetensors or a
// sharded set listed by model.safetensors.index.json (its weight_map names the shard of
// every tensor). Every shard is memory-mapped; tensors are looked up by name.
// Immutable after open except for release(); one loader thread drives it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"

namespace specd {

inline constexpr const char* kSingleWeightsFile = "model.safetensors";
inline constexpr const char* kWeightIndexFile = "model.safetensors.index.json";

// Parses an index's JSON text into tensor name -> shard file name. Throws SpecdError:
// malformed_json, missing_field (no weight_map), bad_value (a value that is not a plain
// file name in the same directory). source_name goes into every message.
std::map<std::string, std::string, std::less<>> parse_weight_index(std::string_view json_text,
                                                                   const std::string& source_name);

class WeightFiles {
 public:
  // Prefers model.safetensors.index.json when present, else model.safetensors.
  // Throws SpecdError(missing_file) for no weights, a missing shard, or an unreadable
  // index, and missing_tensor for a tensor the index lists but its shard lacks.
  static WeightFiles open(const std::filesystem::path& dir);

  bool contains(std::string_view name) const { return where_.count(name) != 0; }
  // Throws SpecdError(missing_tensor) naming the index (or the single file) and the tensor.
  const TensorView& tensor(std::string_view name) const;
  // The __metadata__ of the file that holds name.
  const std::map<std::string, std::string>& metadata_of(std::string_view name) const;
  // The file that holds name (for messages); the index path for sharded sets.
  std::string describe(std::string_view name) const;
  const std::filesystem::path& source() const { return source_; }
  size_t shard_count() const { return shards_.size(); }
  uint64_t total_bytes() const { return total_bytes_; }  // sum of the shard file sizes

  // Drops the pages of a tensor already converted from this process's resident set, so
  // a load never holds the mapped file and the converted model in full at once.
  void release(const TensorView& view) const;

 private:
  std::filesystem::path source_;  // index or single file
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, size_t, std::less<>> where_;  // tensor -> shard index
  uint64_t total_bytes_ = 0;
};

}  // namespace specd
