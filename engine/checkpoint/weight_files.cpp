#include "engine/checkpoint/weight_files.hpp"

#include <simdjson.h>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"

namespace specd {

namespace fs = std::filesystem;

std::map<std::string, std::string, std::less<>> parse_weight_index(std::string_view json_text,
                                                                   const std::string& source_name) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(json_text.data(), json_text.size()).get(root))
    throw SpecdError(ErrorCode::malformed_json, source_name + ": invalid JSON: " + simdjson::error_message(err));
  simdjson::dom::element map_element;
  if (root.at_key("weight_map").get(map_element) != simdjson::SUCCESS)
    throw SpecdError(ErrorCode::missing_field, source_name + ": field 'weight_map' is missing");
  simdjson::dom::object map;
  if (map_element.get_object().get(map))
    throw SpecdError(ErrorCode::bad_value, source_name + ": field 'weight_map' must be an object");
  std::map<std::string, std::string, std::less<>> out;
  for (auto [key, value] : map) {
    std::string_view file;
    if (value.get_string().get(file))
      throw SpecdError(ErrorCode::bad_value,
                       source_name + ": weight_map entry '" + std::string(key) + "' must be a file name string");
    // Shards live beside the index; a path could reach outside the model directory.
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string_view::npos)
      throw SpecdError(ErrorCode::bad_value, source_name + ": weight_map entry '" + std::string(key) + "' names '" +
                                                 std::string(file) + "', not a file name in the model directory");
    out.emplace(std::string(key), std::string(file));
  }
  if (out.empty()) throw SpecdError(ErrorCode::bad_value, source_name + ": weight_map is empty");
  return out;
}

WeightFiles WeightFiles::open(const fs::path& dir) {
  WeightFiles w;
  std::error_code ec;
  const fs::path index_path = dir / kWeightIndexFile;
  if (!fs::exists(index_path, ec)) {
    w.source_ = dir / kSingleWeightsFile;
    if (!fs::exists(w.source_, ec))
      throw SpecdError(ErrorCode::missing_file,
                       w.source_.string() + " does not exist (nor does " + index_path.filename().string() + ")");
    w.shards_.push_back(SafetensorsFile::open(w.source_));
    for (const auto& name : w.shards_[0].names()) w.where_.emplace(name, 0);
    w.total_bytes_ = fs::file_size(w.source_);
    return w;
  }
  w.source_ = index_path;
  const auto weight_map = parse_weight_index(read_whole_file(index_path, "weight index"), index_path.string());
  std::map<std::string, size_t, std::less<>> shard_of_file;
  for (const auto& [tensor, file] : weight_map) {
    auto [it, added] = shard_of_file.emplace(file, w.shards_.size());
    if (added) {
      const fs::path shard_path = dir / file;
      if (!fs::exists(shard_path, ec))
        throw SpecdError(ErrorCode::missing_file, index_path.string() + " lists shard " + file + " (for " + tensor +
                                                      "), but " + shard_path.string() + " does not exist");
      w.shards_.push_back(SafetensorsFile::open(shard_path));
      w.total_bytes_ += fs::file_size(shard_path);
    }
    if (!w.shards_[it->second].contains(tensor))
      throw SpecdError(ErrorCode::missing_tensor, index_path.string() + " lists tensor " + tensor + " in " + file +
                                                      ", but that shard has no such tensor");
    w.where_.emplace(tensor, it->second);
  }
  return w;
}

const TensorView& WeightFiles::tensor(std::string_view name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw SpecdError(ErrorCode::missing_tensor, source_.string() + ": tensor " + std::string(name) + " is missing");
  return shards_[it->second].tensor(name);
}

const std::map<std::string, std::string>& WeightFiles::metadata_of(std::string_view name) const {
  (void)tensor(name);  // throws missing_tensor for an unknown name
  return shards_[where_.find(name)->second].metadata();
}

std::string WeightFiles::describe(std::string_view name) const {
  auto it = where_.find(name);
  if (it == where_.end() || shards_.size() == 1) return source_.string();
  return shards_[it->second].path().string() + " (via " + source_.filename().string() + ")";
}

void WeightFiles::release(const TensorView& view) const { release_pages(view.data, view.nbytes); }

}  // namespace specd
