#pragma once
// Writes a model's weights through the streaming sharded writer, as HF shards them,
// for loader tests on tiny models.
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/sharded_writer.hpp"
#include "engine/model/llama_model.hpp"

namespace specd::testing {

// Parameters in model order (fused views are fine: values are copied out flat).
inline WrittenWeights write_sharded(const LlamaModel& model, const std::filesystem::path& dir, DType storage,
                                    uint64_t max_shard_bytes) {
  std::vector<TensorSpec> specs;
  std::vector<at::Tensor> values;
  for (const auto& item : model.named_parameters()) {
    specs.push_back({item.key(), item.value().sizes().vec()});
    values.push_back(item.value().detach().contiguous().view({-1}));
  }
  auto fill = [&](const TensorSpec& spec, int64_t first, std::span<float> out) {
    const at::Tensor& v = values[static_cast<size_t>(&spec - specs.data())];
    std::copy_n(v.data_ptr<float>() + first, out.size(), out.data());
  };
  WrittenWeights written = write_weights_streaming(dir, specs, storage, max_shard_bytes, fill);
  std::ofstream(dir / "config.json") << model_config_to_json(model.config());
  return written;
}

}  // namespace specd::testing
