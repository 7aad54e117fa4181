#include "engine/model/gguf_export.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_quantize.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "engine/model/gguf_model.hpp"
#include "engine/model/llama_model.hpp"

namespace specd {

namespace {

namespace fs = std::filesystem;

struct ExportTensor {
  std::string hf, gguf;
  std::vector<int64_t> shape;  // HF's: [rows, inputs] or [n]
  GgmlType type = GgmlType::f32;
};

// The HF tensors of the model in llama.cpp's file order.
std::vector<ExportTensor> tensors_of(const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  std::vector<ExportTensor> out{{"model.embed_tokens.weight", "", {c.vocab_size, h}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "input_layernorm.weight", "", {h}});
    for (const auto& [name, rows] : {std::pair<const char*, int64_t>{"q", q}, {"k", kv}, {"v", kv}}) {
      out.push_back({p + "self_attn." + name + "_proj.weight", "", {rows, h}});
      if (c.qkv_bias) out.push_back({p + "self_attn." + name + "_proj.bias", "", {rows}});
    }
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", "", {c.head_dim}});
      out.push_back({p + "self_attn.k_norm.weight", "", {c.head_dim}});
    }
    out.push_back({p + "self_attn.o_proj.weight", "", {h, q}});
    out.push_back({p + "post_attention_layernorm.weight", "", {h}});
    out.push_back({p + "mlp.gate_proj.weight", "", {c.intermediate_size, h}});
    out.push_back({p + "mlp.up_proj.weight", "", {c.intermediate_size, h}});
    out.push_back({p + "mlp.down_proj.weight", "", {h, c.intermediate_size}});
  }
  out.push_back({"model.norm.weight", "", {h}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", "", {c.vocab_size, h}});
  for (ExportTensor& t : out) t.gguf = gguf_tensor_name(t.hf).value();
  return out;
}

void add_model_metadata(const ModelConfig& c, const std::string& name, GgufPreset preset, GgufWriter& w) {
  const std::string a = c.model_type + ".";
  w.string("general.architecture", c.model_type).string("general.name", name);
  w.u32("general.file_type", gguf_file_type(preset)).u32("general.quantization_version", 2);
  w.u32(a + "context_length", uint32_t(c.max_position_embeddings)).u32(a + "embedding_length", uint32_t(c.hidden_size));
  w.u32(a + "feed_forward_length", uint32_t(c.intermediate_size)).u32(a + "block_count", uint32_t(c.num_hidden_layers));
  w.u32(a + "attention.head_count", uint32_t(c.num_attention_heads));
  w.u32(a + "attention.head_count_kv", uint32_t(c.num_key_value_heads));
  w.u32(a + "attention.key_length", uint32_t(c.head_dim)).u32(a + "attention.value_length", uint32_t(c.head_dim));
  w.u32(a + "rope.dimension_count", uint32_t(c.head_dim)).f32(a + "rope.freq_base", float(c.rope_theta));
  w.f32(a + "attention.layer_norm_rms_epsilon", float(c.rms_norm_eps)).u32(a + "vocab_size", uint32_t(c.vocab_size));
}

// llama3 rope scaling as convert_hf_to_gguf.py writes it: the per-frequency divisors.
std::vector<float> rope_divisors(const ModelConfig& c) {
  ModelConfig plain = c;
  plain.rope_scaling.reset();
  const at::Tensor d = (rope_inverse_frequencies(plain) / rope_inverse_frequencies(c)).contiguous();
  return std::vector<float>(d.data_ptr<float>(), d.data_ptr<float>() + d.numel());
}

// GGUF row r of a llama q or k matrix holds HF row source_row(r) (llama.cpp rotates
// interleaved pairs; HF rotates halves): the inverse of gguf_model.cpp's un-permute.
int64_t source_row(int64_t r, int64_t head_dim) {
  const int64_t half = head_dim / 2, in_head = r % head_dim;
  return r - in_head + (in_head % 2) * half + in_head / 2;
}

void write_tensor(const WeightFiles& files, const ExportTensor& t, bool permute, int64_t head_dim, GgufWriter& w) {
  const TensorView& view = files.tensor(t.hf);
  if (view.shape != t.shape)
    throw SpecdError(ErrorCode::shape_mismatch,
                     files.describe(t.hf) + ": tensor " + t.hf + " does not have the config's shape");
  if (view.dtype == DType::U8)
    throw SpecdError(ErrorCode::unsupported_dtype, files.describe(t.hf) + ": tensor " + t.hf + " is already quantized");
  const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, in = t.shape.back();
  const size_t elem = dtype_size(view.dtype), row_bytes = gguf_row_bytes(t.type, in);
  constexpr int64_t kChunk = 256;  // rows converted and quantized at a time
  std::vector<std::byte> out(static_cast<size_t>(std::min(rows, kChunk)) * row_bytes);
  for (int64_t first = 0; first < rows; first += kChunk) {
    const int64_t n = std::min(kChunk, rows - first);
    at::parallel_for(0, n, 8, [&](int64_t begin, int64_t end) {
      std::vector<float> x(static_cast<size_t>(in));
      for (int64_t r = begin; r < end; ++r) {
        const int64_t from = permute ? source_row(first + r, head_dim) : first + r;
        TensorView row = view;
        row.data = view.data + static_cast<size_t>(from * in) * elem;
        row.nbytes = static_cast<size_t>(in) * elem;
        convert_to_float32(row, x.data());
        quantize_gguf_row(x.data(), in, t.type, out.data() + static_cast<size_t>(r) * row_bytes);
      }
    });
    w.write_tensor(out.data(), static_cast<size_t>(n) * row_bytes);
  }
  files.release(view);
}

}  // namespace

GgufExportInfo export_gguf(const fs::path& from_dir, const fs::path& to, GgufPreset preset, GgufWriter& writer) {
  const ModelConfig c = load_model_config(from_dir / "config.json");
  const WeightFiles files = WeightFiles::open(from_dir);
  std::vector<ExportTensor> tensors = tensors_of(c);
  GgufExportInfo info;
  add_model_metadata(c, from_dir.filename().string(), preset, writer);
  std::vector<float> divisors;
  if (c.rope_scaling) {
    divisors = rope_divisors(c);
    writer.declare_tensor("rope_freqs.weight", {static_cast<int64_t>(divisors.size())}, GgmlType::f32,
                          divisors.size() * sizeof(float));
  }
  for (ExportTensor& t : tensors) {
    t.type = gguf_tensor_type(preset, t.gguf, static_cast<int>(t.shape.size()), t.shape.back(), c.num_hidden_layers,
                              !c.tie_word_embeddings);
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    std::vector<int64_t> dims(t.shape.rbegin(), t.shape.rend());  // ne[0] first
    writer.declare_tensor(t.gguf, dims, t.type, static_cast<size_t>(rows) * gguf_row_bytes(t.type, t.shape.back()));
    if (t.shape.size() == 2) ++info.tensors_of_type[ggml_type_name(uint32_t(t.type))];
  }
  writer.begin(to);
  if (!divisors.empty())
    writer.write_tensor(reinterpret_cast<const std::byte*>(divisors.data()), divisors.size() * sizeof(float));
  LoadProgress progress("quantizing " + from_dir.filename().string() + " to " + gguf_preset_name(preset),
                        files.total_bytes());
  for (const ExportTensor& t : tensors) {
    const bool permute =
        c.model_type == "llama" && (t.gguf.ends_with("attn_q.weight") || t.gguf.ends_with("attn_k.weight"));
    write_tensor(files, t, permute, c.head_dim, writer);
    progress.advance(files.tensor(t.hf).nbytes);
  }
  writer.finish();
  progress.finish();
  info.bytes = fs::file_size(to);
  return info;
}

}  // namespace specd
