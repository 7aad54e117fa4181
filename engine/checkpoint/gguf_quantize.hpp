#pragma once
// Float rows to the GGUF block formats `specd quantize` writes, in llama.cpp's byte layout
// (ggml-common.h: block_q4_K, block_q5_K, block_q6_K, block_q5_0, block_q5_1; Q8_0 and
// Q4_0 through kernels::quantize_row), with the scale search llama.cpp's reference
// quantizers do without an importance matrix: the K-quants fit each sub-block's scale (and
// min) by weighted least squares over a sweep of candidate scales, then quantize the
// sub-block scales to 6 or 8 bits under one F16 super-block scale. Pure functions, any thread.
#include <cstddef>
#include <cstdint>

#include "engine/checkpoint/gguf_file.hpp"

namespace specd {

// Bytes of one row of n inputs in `type` (n a multiple of the type's block).
size_t gguf_row_bytes(GgmlType type, int64_t n);
// Inputs per block: 256 for the K-quants, 32 for the others this writes.
int64_t gguf_block_inputs(GgmlType type);

// Writes gguf_row_bytes(type, n) bytes. `type` is one of q4_k, q5_k, q6_k, q5_0, q5_1,
// q8_0, q4_0, f16, f32; n a multiple of gguf_block_inputs(type).
void quantize_gguf_row(const float* x, int64_t n, GgmlType type, std::byte* out);

}  // namespace specd
