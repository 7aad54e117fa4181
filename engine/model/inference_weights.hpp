#pragma once
// A Llama-family model's weights (Llama, Qwen2, Qwen3) for inference: every matrix packed once for the linear kernels
// (engine/kernels/) in its checkpoint dtype, never widened to float in memory; q/k/v and
// gate/up fused so a layer runs four linears; norm weights in float. Immutable after
// construction: any thread may read it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/kernels/packed_weight.hpp"
#include "engine/model/weight_format.hpp"

namespace specd {

struct LayerWeights {
  kernels::PackedWeight qkv;      // [(heads + 2 kv_heads) * head_dim, hidden]
  kernels::PackedWeight o;        // [hidden, heads * head_dim]
  kernels::PackedWeight gate_up;  // [2 * intermediate, hidden]
  kernels::PackedWeight down;     // [hidden, intermediate]
  std::vector<float> input_norm, post_attention_norm;
  std::vector<float> qkv_bias;        // Qwen2: q, k, v biases in qkv's row order; empty otherwise
  std::vector<float> q_norm, k_norm;  // Qwen3: RMSNorm weights of one head (head_dim); empty otherwise
};

struct InferenceWeights {
  ModelConfig config;
  kernels::PackedWeight embed;    // [vocab, hidden]: token rows, and the output head when tied
  kernels::PackedWeight lm_head;  // untied models only
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;

  const kernels::PackedWeight& head() const { return config.tie_word_embeddings ? embed : lm_head; }
  int64_t parameter_count() const;
  size_t bytes() const;  // packed matrices and norms
};

// One named tensor's raw bytes as stored (row-major), for packing.
struct RawTensor {
  const void* data = nullptr;
  kernels::Dtype dtype = kernels::Dtype::f32;
  bool mapped = false;  // data lies in a read-only file mapping: pages once read may be dropped
};

// Gives the tensor of a Hugging Face name (`model.layers.3.mlp.up_proj.weight`) after
// checking it has `shape`; called once per tensor, in order, so a source may release a
// tensor's memory when asked for the next one.
using TensorSource = std::function<RawTensor(const std::string& name, const std::vector<int64_t>& shape)>;

// Appends the rows of a [rows, in] float matrix (f32, f16 or bf16) as llama.cpp blocks of
// `to` (q8_0 or q4_0) with its rounding (kernels::quantize_row), row after row: the
// bytes a GGUF tensor or a quantized checkpoint's U8 tensor holds.
void append_quantized(const RawTensor& t, int64_t rows, int64_t in, kernels::Dtype to, std::vector<std::byte>& blocks);

// A quantized source matrix (a quantized checkpoint's or a GGUF file's blocks) is packed
// as it is; SpecdError(unsupported_dtype) when `format` would hold it in another format.
InferenceWeights pack_inference_weights(const ModelConfig& config, const TensorSource& source,
                                        WeightFormat format = WeightFormat::stored);

}  // namespace specd
