#pragma once
// The weight formats of --weights and [engine] target_weights / draft_weights, and the
// block format each gives a matrix. Plain values; no model code.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/kernels/packed_weight.hpp"

namespace specd {

// How a checkpoint's float matrices are held for inference: as stored (F32, F16, BF16,
// or a GGUF file's own blocks), or every matrix quantized at load to int8 (Q8_0) or int4
// (Q4_0) blocks. int4 includes the output head, where llama.cpp's Q4_0 keeps Q6_K: on the
// committed pair an int4 head cost 0.0% (target) and 0.5% (draft) perplexity, and at 3B
// an int8 head would add 12% to the bytes each int4 decode step reads (BENCHMARKS.md,
// "What quantization costs in quality").
enum class WeightFormat : uint8_t { stored, int8, int4 };

const char* weight_format_name(WeightFormat f);  // "stored", "int8", "int4"
// The names above; nullopt for anything else.
std::optional<WeightFormat> parse_weight_format(std::string_view text);

// The block format of `format`; nullopt (as stored) for `stored`.
std::optional<kernels::Dtype> quantized_dtype(WeightFormat format);

}  // namespace specd
