#pragma once
// Reads and writes Hugging Face Llama model directories: config.json plus
// model.safetensors or a sharded set (model.safetensors.index.json); F32, F16 or BF16
// per tensor. For inference the weights stay in their dtype, packed for the kernels;
// the reference load widens them into float32 torch parameters.
#include <cstdint>
#include <filesystem>
#include <memory>

#include "engine/checkpoint/safetensors.hpp"
#include "engine/model/inference_weights.hpp"

namespace specd {

class LlamaModel;

// What a load cost, for benchmarks and logs.
struct LoadInfo {
  double seconds = 0;       // config parse to packed, ready model
  uint64_t file_bytes = 0;  // bytes of the weight files
  size_t shard_count = 0;
};

// A quantized checkpoint (`specd quantize`, docs/quantized_checkpoint.md) stores each
// quantized matrix as a U8 tensor [out, in / 32 * block bytes] of llama.cpp's blocks,
// row after row, and names the block format ("q8_0", "q4_0") in its file's metadata
// under this prefix followed by the tensor's name.
inline constexpr const char* kBlockFormatKey = "specd.blocks.";

// The kernels' dtype of a safetensors float dtype (F32, F16, BF16).
kernels::Dtype kernel_dtype(DType d);

// Loads config.json and the weights from dir, quantizing float matrices at load when
// `weights` asks for it. Every problem (missing file, shard or tensor, wrong shape,
// unknown dtype, truncated or malformed file, tie_word_embeddings that disagrees with the
// files, a quantized checkpoint asked for another format) is a SpecdError naming the file
// and the problem. Weights of 256 MiB and more show a progress bar on stderr. A path
// ending in .gguf is read as a llama.cpp GGUF file instead (engine/model/gguf_model.hpp).
std::shared_ptr<LlamaModel> load_model(const std::filesystem::path& dir, WeightFormat weights = WeightFormat::stored,
                                       LoadInfo* info = nullptr);

// The same checks, the weights as float32 torch parameters (training, forward_full,
// reference checks); the model packs them for forward() on first use.
std::shared_ptr<LlamaModel> load_reference_model(const std::filesystem::path& dir);

// Writes config.json and model.safetensors (weights stored as `storage`) into dir.
void save_model(const LlamaModel& model, const std::filesystem::path& dir, DType storage);

}  // namespace specd
