#include "engine/model/inference_weights.hpp"

#include <ATen/Parallel.h>

#include <cstring>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/mapped_file.hpp"

namespace specd {

namespace {

using kernels::Dtype;
using kernels::PackedWeight;
using kernels::PackedWeightBuilder;

float stored_to_float(const std::byte* p, Dtype dtype) {
  if (dtype == Dtype::f32) {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return dtype == Dtype::f16 ? kernels::f16_to_float(h) : kernels::bf16_to_float(h);
}

std::vector<float> to_floats(const RawTensor& t, int64_t n) {
  std::vector<float> out(n);
  const auto* p = static_cast<const std::byte*>(t.data);
  const size_t size = kernels::dtype_size(t.dtype);
  for (int64_t i = 0; i < n; ++i) out[i] = stored_to_float(p + i * size, t.dtype);
  return out;
}

// The block format a matrix is quantized to at load; nullopt keeps it as stored.
using QuantizeTo = std::optional<Dtype>;

size_t matrix_bytes(Dtype dtype, int64_t rows, int64_t in) {
  return static_cast<size_t>(rows) * kernels::stored_row_bytes(dtype, in);
}

void check_quantizable(const std::string& name, int64_t in, Dtype dtype, QuantizeTo to) {
  if (kernels::is_quantized(dtype) && to && *to != dtype) {
    throw SpecdError(ErrorCode::unsupported_dtype, "tensor " + name + " is stored as " + kernels::dtype_name(dtype) +
                                                       "; quantizing it again to " + kernels::dtype_name(*to) +
                                                       " would compound the rounding: load it as stored");
  }
  if (to && in % kernels::kQuantGroup != 0) {
    throw SpecdError(ErrorCode::unsupported_architecture, "cannot quantize " + name + " (" + std::to_string(in) +
                                                              " inputs) to " + kernels::dtype_name(*to) +
                                                              ": its blocks group 32 inputs");
  }
}

// Packing spread over the intra-op threads; a source row read from a file mapping has
// its pages dropped once packed.
kernels::PackOptions pack_options(const RawTensor& t) {
  kernels::PackOptions options;
  options.parallel = [](int64_t n, const std::function<void(int64_t, int64_t)>& body) {
    at::parallel_for(0, n, 4, body);
  };
  if (t.mapped) options.packed = [](const std::byte* data, size_t bytes) { release_pages(data, bytes); };
  return options;
}

// Packs the row-wise concatenation of several [rows_i, in] tensors, quantized to `to`
// when given and stored as floats; runs of another dtype become parts of a stacked matrix. Each part is packed (or
// quantized into blocks, a quarter to a half of its float bytes, and those packed) before the next is asked for: a
// source may release a tensor's memory then.
PackedWeight pack_stacked(const TensorSource& source, const std::vector<std::pair<std::string, int64_t>>& parts,
                          int64_t in, QuantizeTo to) {
  int64_t total = 0;
  for (const auto& part : parts) total += part.second;
  std::optional<PackedWeightBuilder> builder;
  std::vector<PackedWeight> stacked;  // parts of other dtypes before the builder's (PackedWeight::stack)
  std::vector<std::byte> blocks;      // a part quantized here
  for (const auto& [name, part_rows] : parts) {
    const RawTensor t = source(name, {part_rows, in});
    check_quantizable(name, in, t.dtype, to);
    const bool quantize_here = to && !kernels::is_quantized(t.dtype);
    const Dtype dtype = quantize_here ? *to : t.dtype;
    // llama-quantize's K-quant presets mix types within a fused matrix (Q4_K q and k
    // with a Q6_K v): the rows so far become a part of their own.
    if (builder && builder->dtype() != dtype) {
      total -= builder->added();
      stacked.push_back(std::move(*builder).finish_added());
      builder.reset();
    }
    if (!builder) builder.emplace(total, in, dtype);
    if (quantize_here) {
      blocks.clear();
      append_quantized(t, part_rows, in, *to, blocks);
      if (t.mapped) release_pages(static_cast<const std::byte*>(t.data), matrix_bytes(t.dtype, part_rows, in));
      builder->add(blocks.data(), part_rows, pack_options(RawTensor{}));
    } else {
      builder->add(t.data, part_rows, pack_options(t));
    }
  }
  stacked.push_back(std::move(*builder).finish());
  return PackedWeight::stack(std::move(stacked));
}

std::vector<float> float_vector(const TensorSource& source, const std::string& name, int64_t n) {
  return to_floats(source(name, {n}), n);
}

LayerWeights pack_layer(const ModelConfig& c, const TensorSource& source, int64_t i, QuantizeTo to) {
  const std::string p = "model.layers." + std::to_string(i) + ".";
  const int64_t q_rows = c.num_attention_heads * c.head_dim, kv_rows = c.num_key_value_heads * c.head_dim;
  LayerWeights l;
  l.input_norm = float_vector(source, p + "input_layernorm.weight", c.hidden_size);
  l.qkv = pack_stacked(source,
                       {{p + "self_attn.q_proj.weight", q_rows},
                        {p + "self_attn.k_proj.weight", kv_rows},
                        {p + "self_attn.v_proj.weight", kv_rows}},
                       c.hidden_size, to);
  if (c.qkv_bias) {
    const std::pair<const char*, int64_t> parts[] = {{"q", q_rows}, {"k", kv_rows}, {"v", kv_rows}};
    for (const auto& [name, n] : parts) {
      const std::vector<float> b = float_vector(source, p + "self_attn." + std::string(name) + "_proj.bias", n);
      l.qkv_bias.insert(l.qkv_bias.end(), b.begin(), b.end());
    }
  }
  if (c.qk_norm) {
    l.q_norm = float_vector(source, p + "self_attn.q_norm.weight", c.head_dim);
    l.k_norm = float_vector(source, p + "self_attn.k_norm.weight", c.head_dim);
  }
  l.o = pack_stacked(source, {{p + "self_attn.o_proj.weight", c.hidden_size}}, q_rows, to);
  l.post_attention_norm = float_vector(source, p + "post_attention_layernorm.weight", c.hidden_size);
  l.gate_up = pack_stacked(
      source, {{p + "mlp.gate_proj.weight", c.intermediate_size}, {p + "mlp.up_proj.weight", c.intermediate_size}},
      c.hidden_size, to);
  l.down = pack_stacked(source, {{p + "mlp.down_proj.weight", c.hidden_size}}, c.intermediate_size, to);
  return l;
}

}  // namespace

void append_quantized(const RawTensor& t, int64_t rows, int64_t in, Dtype to, std::vector<std::byte>& blocks) {
  const size_t row_bytes = matrix_bytes(to, 1, in), first = blocks.size();
  blocks.resize(first + static_cast<size_t>(rows) * row_bytes);
  const auto* p = static_cast<const std::byte*>(t.data);
  const size_t elem = kernels::dtype_size(t.dtype);
  // Rows in parallel: a 3B model's 3.2 G weights take minutes on one core.
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    std::vector<float> row(in);
    for (int64_t r = begin; r < end; ++r) {
      const std::byte* src = p + static_cast<size_t>(r * in) * elem;
      for (int64_t i = 0; i < in; ++i) row[i] = stored_to_float(src + i * elem, t.dtype);
      kernels::quantize_row(row.data(), in, to, blocks.data() + first + static_cast<size_t>(r) * row_bytes);
    }
  });
}

InferenceWeights pack_inference_weights(const ModelConfig& config, const TensorSource& source, WeightFormat format) {
  const QuantizeTo to = quantized_dtype(format);
  InferenceWeights w;
  w.config = config;
  w.embed = pack_stacked(source, {{"model.embed_tokens.weight", config.vocab_size}}, config.hidden_size, to);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) w.layers.push_back(pack_layer(config, source, i, to));
  w.final_norm = float_vector(source, "model.norm.weight", config.hidden_size);
  if (!config.tie_word_embeddings) {
    w.lm_head = pack_stacked(source, {{"lm_head.weight", config.vocab_size}}, config.hidden_size, to);
  }
  return w;
}

int64_t InferenceWeights::parameter_count() const {
  auto n = [](const PackedWeight& m) { return m.out() * m.in(); };
  int64_t total = n(embed) + n(lm_head) + static_cast<int64_t>(final_norm.size());
  for (const LayerWeights& l : layers) {
    total += n(l.qkv) + n(l.o) + n(l.gate_up) + n(l.down);
    total += static_cast<int64_t>(l.input_norm.size() + l.post_attention_norm.size() + l.qkv_bias.size() +
                                  l.q_norm.size() + l.k_norm.size());
  }
  return total;
}

size_t InferenceWeights::bytes() const {
  size_t total = embed.bytes() + lm_head.bytes() + final_norm.size() * sizeof(float);
  for (const LayerWeights& l : layers) {
    total += l.qkv.bytes() + l.o.bytes() + l.gate_up.bytes() + l.down.bytes();
    total +=
        (l.input_norm.size() + l.post_attention_norm.size() + l.qkv_bias.size() + l.q_norm.size() + l.k_norm.size()) *
        sizeof(float);
  }
  return total;
}

}  // namespace specd
