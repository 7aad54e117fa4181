#pragma once
// The weight formats of --weights and [engine] target_weights / draft_weights, and the
// block format each gives a matrix. Plain values; no model code.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/kernels/packed_weight.hpp"

namespace specd {

// How a checkpoint's float matrices are held for inference: as stored (F32, F16, BF16,
// or a GGUF file's own blocks), or quantized at load to int8 (Q8_0) or int4 (Q4_0)
// blocks. int4 keeps the output head (the embeddings when tied) at int8, as
// llama.cpp's Q4_0 keeps it at Q6_K or Q8_0: the head's error reaches every logit
// directly, and int4 there costs more perplexity than it saves in bytes
// (BENCHMARKS.md, "Quantized weights").
enum class WeightFormat : uint8_t { stored, int8, int4 };

const char* weight_format_name(WeightFormat f);  // "stored", "int8", "int4"
// The names above; nullopt for anything else.
std::optional<WeightFormat> parse_weight_format(std::string_view text);

// The block format a matrix is held in under `format`: nullopt (as stored) for `stored`;
// the output head (lm_head, or the embeddings when tied) q8_0 under int8 and int4.
std::optional<kernels::Dtype> quantized_dtype(WeightFormat format, bool output_head);

}  // namespace specd
