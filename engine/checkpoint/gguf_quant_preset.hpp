#pragma once
// Which GGUF type each tensor gets under llama-quantize's presets (Q4_K_M, Q5_K_M, Q6_K,
// Q4_0, Q8_0), so `specd quantize` writes the files users download: the output matrix (or
// a tied token_embd) at Q6_K, attn_v and ffn_down at Q6_K in the layers use_more_bits
// picks (the first and last eighth, and every third between) for the _M presets, rows
// that are not whole 256-blocks in the 32-block fallbacks (Q4_K -> Q5_0, Q5_K -> Q5_1,
// Q6_K -> Q8_0), and 1-D tensors in F32. Pure functions.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/checkpoint/gguf_file.hpp"

namespace specd {

enum class GgufPreset { q4_k_m, q5_k_m, q6_k, q4_0, q8_0 };

// "q4_k_m" (any case) -> the preset; nullopt for another name.
std::optional<GgufPreset> gguf_preset(std::string_view name);
const char* gguf_preset_name(GgufPreset preset);  // "Q4_K_M", ...
// general.file_type (llama.cpp's llama_ftype): 15, 17, 18, 2, 7.
uint32_t gguf_file_type(GgufPreset preset);

// The type of tensor `name` (GGUF's: "blk.3.attn_v.weight", "output.weight") of `dims`
// dimensions and `inputs` values a row, in a model of `layers` layers; has_output: the
// file holds an output.weight (else token_embd is the output matrix too).
GgmlType gguf_tensor_type(GgufPreset preset, std::string_view name, int dims, int64_t inputs, int64_t layers,
                          bool has_output);

}  // namespace specd
