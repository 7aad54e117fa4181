#pragma once
// A Hugging Face model directory (Llama, Qwen2, Qwen3; F32/F16/BF16 weights) written as a
// GGUF file as llama.cpp's converter and llama-quantize would write it: the `<arch>.*`
// metadata, GGUF tensor names, a llama model's q/k rows permuted for llama.cpp's RoPE,
// llama3 rope scaling as rope_freqs.weight, and each matrix in the type the preset gives
// it (gguf_quant_preset.hpp), quantized row by row. The tokenizer's metadata is the
// caller's (engine/tokenizer/gguf_vocab_export.hpp). Streams tensor by tensor.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "engine/checkpoint/gguf_quant_preset.hpp"
#include "engine/checkpoint/gguf_writer.hpp"

namespace specd {

struct GgufExportInfo {
  std::map<std::string, int> tensors_of_type;  // "Q4_K" -> count, over the 2-D tensors
  uint64_t bytes = 0;                          // the file's size
};

// `writer` already holds the tokenizer's metadata; this adds the model's and writes `to`.
// Throws SpecdError: the checkpoint's errors, unsupported_dtype for a tensor already quantized.
GgufExportInfo export_gguf(const std::filesystem::path& from_dir, const std::filesystem::path& to, GgufPreset preset,
                           GgufWriter& writer);

}  // namespace specd
