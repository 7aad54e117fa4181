#pragma once
// Reads and writes Hugging Face Llama model directories: config.json plus
// model.safetensors (F32, F16 or BF16; converted to float32 for compute at load).
#include <filesystem>
#include <memory>

#include "engine/safetensors.hpp"

namespace specd {

class LlamaModel;

// Loads config.json and model.safetensors from dir. Every problem (missing file or
// tensor, wrong shape, unknown dtype, truncated or malformed file) is a SpecdError
// naming the file and the problem.
std::shared_ptr<LlamaModel> load_model(const std::filesystem::path& dir);

// Writes config.json and model.safetensors (weights stored as `storage`) into dir.
void save_model(const LlamaModel& model, const std::filesystem::path& dir, DType storage);

}  // namespace specd
