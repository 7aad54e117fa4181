#pragma once
// Writes model weights tensor by tensor, chunk by chunk, into safetensors files split the
// way Hugging Face splits them: one model.safetensors when everything fits in one shard,
// else model-0000i-of-0000n.safetensors plus model.safetensors.index.json. Memory use is
// one chunk, whatever the model size. Runs on the caller's thread.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"

namespace specd {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  // Stored as this instead of the writer's default (safetensors keeps a dtype per
  // tensor): e.g. F32 norm weights in an F16 checkpoint.
  std::optional<DType> dtype = std::nullopt;
  int64_t numel() const;
  DType stored_as(DType fallback) const { return dtype.value_or(fallback); }
};

// Fills out with elements [first, first + out.size()) of tensor spec, in row-major order.
using TensorFill = std::function<void(const TensorSpec& spec, int64_t first, std::span<float> out)>;

struct WrittenWeights {
  std::vector<std::filesystem::path> files;  // shards in order (one: model.safetensors)
  uint64_t tensor_bytes = 0;                 // the index's metadata.total_size
};

// Tensors keep their order, each stored as spec.stored_as(storage); a shard is closed before a tensor that would push
// it past max_shard_bytes (a larger single tensor gets a shard of its own). Each file is written under a temporary name
// and renamed. Throws SpecdError(missing_file) on a write error, invalid_argument for a repeated or unusable name.
// progress (may be empty) gets bytes written.
WrittenWeights write_weights_streaming(const std::filesystem::path& dir, std::span<const TensorSpec> tensors,
                                       DType storage, uint64_t max_shard_bytes, const TensorFill& fill,
                                       const std::function<void(uint64_t)>& progress = {});

}  // namespace specd
