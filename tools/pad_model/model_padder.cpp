#include "tools/pad_model/model_padder.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/weight_files.hpp"

namespace specd {

namespace fs = std::filesystem;

namespace {

// The layer a tensor belongs to (-1 for the embedding, lm_head and the final norm) and
// its name within the layer.
struct TensorRole {
  int64_t layer = -1;
  std::string suffix;
};

TensorRole role_of(const std::string& name) {
  const std::string prefix = "model.layers.";
  if (name.rfind(prefix, 0) != 0) return {-1, name};
  const size_t dot = name.find('.', prefix.size());
  return {std::stoll(name.substr(prefix.size(), dot - prefix.size())), name.substr(dot + 1)};
}

bool is_norm(const TensorRole& r) {
  return r.suffix == "input_layernorm.weight" || r.suffix == "post_attention_layernorm.weight" ||
         r.suffix == "model.norm.weight";
}

bool writes_residual(const TensorRole& r) {
  return r.suffix == "self_attn.o_proj.weight" || r.suffix == "mlp.down_proj.weight";
}

const char* torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "float32";
    case DType::F16:
      return "float16";
    case DType::BF16:
      return "bfloat16";
    case DType::U8:
      break;
  }
  return "";
}

// Builds each padded tensor in float32 from the source checkpoint.
class Padder {
 public:
  Padder(const ModelConfig& source, const fs::path& from, const PadOptions& options)
      : source_(source), files_(WeightFiles::open(from)), options_(options) {
    for (auto& spec : llama_tensor_specs(source)) source_shapes_[spec.name] = spec.shape;
  }

  DType source_dtype(const std::string& name) const {
    return files_.tensor(source_shapes_.count(name) ? name : "model.embed_tokens.weight").dtype;
  }

  at::Tensor build(const TensorSpec& spec, size_t index, int64_t hidden) const {
    const TensorRole role = role_of(spec.name);
    const bool original = role.layer < source_.num_hidden_layers;
    if (is_norm(role)) {
      if (!original) return at::ones(spec.shape, at::kFloat);
      const double scale = std::sqrt(double(source_.hidden_size) / double(hidden));
      at::Tensor out = at::zeros(spec.shape, at::kFloat);
      out.narrow(0, 0, source_.hidden_size).copy_((read(spec.name).to(at::kDouble) * scale).to(at::kFloat));
      return out;
    }
    if (writes_residual(role)) {
      at::Tensor out = at::zeros(spec.shape, at::kFloat);
      if (original) place(out, read(spec.name));
      return out;
    }
    // Readers of the residual (q, k, v, gate, up) and the embeddings: the source block
    // with zero columns beside it; new rows (heads, MLP units, layers) random.
    at::Tensor out = role.layer < 0 ? at::zeros(spec.shape, at::kFloat) : random(spec, index);
    if (original) {
      const at::Tensor src = read(spec.name);
      out.narrow(0, 0, src.size(0)).zero_();
      place(out, src);
    }
    return out;
  }

 private:
  at::Tensor read(const std::string& name) const {
    const TensorView& view = files_.tensor(name);
    if (view.shape != source_shapes_.at(name))
      throw SpecdError(ErrorCode::shape_mismatch,
                       files_.describe(name) + ": tensor " + name + " does not have the shape its config.json implies");
    at::Tensor t = at::empty(view.shape, at::kFloat);
    convert_to_float32(view, t.data_ptr<float>());
    return t;
  }

  static void place(at::Tensor& out, const at::Tensor& src) {
    out.narrow(0, 0, src.size(0)).narrow(1, 0, src.size(1)).copy_(src);
  }

  // One generator per tensor, seeded from its position, as specd_make_synthetic does.
  at::Tensor random(const TensorSpec& spec, size_t index) const {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(options_.seed * 1000003 + index);
    return at::empty(spec.shape, at::kFloat).normal_(0.0, options_.std_dev, gen);
  }

  const ModelConfig& source_;
  WeightFiles files_;
  const PadOptions& options_;
  std::map<std::string, std::vector<int64_t>> source_shapes_;
};

// Each tensor's dtype: the source's (or the one asked for); norm weights in F32 when
// their scale would round in half precision.
bool assign_dtypes(std::vector<TensorSpec>& specs, const Padder& padder, const ModelConfig& source,
                   const ModelConfig& padded, const std::optional<DType>& wanted) {
  const bool exact = norm_scale_is_power_of_two(source.hidden_size, padded.hidden_size);
  bool f32_norms = false;
  for (auto& spec : specs) {
    spec.dtype = wanted ? *wanted : padder.source_dtype(spec.name);
    if (spec.shape.size() == 1 && spec.dtype != DType::F32 && !exact) {
      spec.dtype = DType::F32;
      f32_norms = true;
    }
  }
  return f32_norms;
}

}  // namespace

PadResult pad_model(const fs::path& from, const fs::path& to, const PadOptions& options) {
  const ModelConfig source = load_model_config(from / "config.json");
  // Qwen's q/k/v biases and per-head q/k norms would need padding rules of their own.
  if (source.model_type != "llama")
    throw SpecdError(ErrorCode::unsupported_architecture, (from / "config.json").string() + ": model_type is '" +
                                                              source.model_type +
                                                              "'; specd_pad_model pads Llama models only");
  PadResult result;
  result.config = padded_config(source, options.shape);
  if (options.dtype) result.config.torch_dtype = torch_dtype_name(*options.dtype);
  result.parameters = count_parameters(result.config);
  const Padder padder(source, from, options);
  std::vector<TensorSpec> specs = llama_tensor_specs(result.config);
  result.f32_norms = assign_dtypes(specs, padder, source, result.config, options.dtype);
  uint64_t total = 0;
  for (const auto& s : specs) total += uint64_t(s.numel()) * dtype_size(*s.dtype);
  fs::create_directories(to);
  LoadProgress progress("padding " + from.filename().string(), total);
  size_t current = specs.size();
  at::Tensor built;
  auto fill = [&](const TensorSpec& spec, int64_t first, std::span<float> out) {
    const size_t index = static_cast<size_t>(&spec - specs.data());  // the writer passes our elements
    if (index != current) {
      built = padder.build(spec, index, result.config.hidden_size).contiguous();
      current = index;
    }
    std::memcpy(out.data(), built.data_ptr<float>() + first, out.size() * sizeof(float));
  };
  result.written = write_weights_streaming(to, specs, *specs.front().dtype, options.max_shard_bytes, fill,
                                           [&](uint64_t bytes) { progress.advance(bytes); });
  progress.finish();
  std::ofstream(to / "config.json") << model_config_to_json(result.config);
  if (fs::exists(from / "generation_config.json"))
    fs::copy_file(from / "generation_config.json", to / "generation_config.json", fs::copy_options::overwrite_existing);
  copy_tokenizer_files(from, to);
  return result;
}

}  // namespace specd
