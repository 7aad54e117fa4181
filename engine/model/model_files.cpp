#include "engine/model/model_files.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "engine/model/gguf_model.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/llama_model.hpp"

namespace specd {

namespace {

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Widens in parallel chunks: a 3B model is 3.2 G elements, too slow on one core.
void convert_parallel(const TensorView& view, float* out) {
  const size_t elem = dtype_size(view.dtype);
  const int64_t count = static_cast<int64_t>(view.nbytes / elem);
  constexpr int64_t kGrain = int64_t(1) << 20;
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    TensorView part = view;
    part.data = view.data + begin * elem;
    part.nbytes = static_cast<size_t>(end - begin) * elem;
    convert_to_float32(part, out + begin);
  });
}

const TensorView& checked_tensor(const WeightFiles& files, const std::string& name, at::IntArrayRef shape) {
  const TensorView& view = files.tensor(name);
  if (at::IntArrayRef(view.shape) != shape) {
    throw SpecdError(ErrorCode::shape_mismatch, files.describe(name) + ": tensor " + name + " has shape " +
                                                    shape_text(view.shape) + ", the config needs " + shape_text(shape));
  }
  return view;
}

void copy_tensor(const WeightFiles& files, const std::string& name, at::Tensor& param) {
  const TensorView& view = checked_tensor(files, name, param.sizes());
  convert_parallel(view, param.data_ptr<float>());
  files.release(view);
}

// A U8 tensor of a quantized checkpoint: its block format from the file's metadata, its
// shape checked against the [out, in] matrix it holds.
RawTensor quantized_tensor(const WeightFiles& files, const TensorView& view, const std::vector<int64_t>& shape) {
  const std::string& name = view.name;
  const auto& metadata = files.metadata_of(name);
  const auto it = metadata.find(kBlockFormatKey + name);
  const std::string format = it == metadata.end() ? "" : it->second;
  if (format != "q8_0" && format != "q4_0") {
    throw SpecdError(ErrorCode::unsupported_dtype, files.describe(name) + ": tensor " + name + " is U8, and its " +
                                                       kBlockFormatKey + name + " metadata is '" + format +
                                                       "', not q8_0 or q4_0");
  }
  const kernels::Dtype dtype = format == "q8_0" ? kernels::Dtype::q8_0 : kernels::Dtype::q4_0;
  if (shape.size() != 2 || shape[1] % kernels::kQuantGroup != 0) {
    throw SpecdError(ErrorCode::shape_mismatch, files.describe(name) + ": tensor " + name + " of shape " +
                                                    shape_text(shape) + " cannot hold " + format + " blocks");
  }
  const std::vector<int64_t> blocks{
      shape[0], shape[1] / kernels::kQuantGroup * static_cast<int64_t>(kernels::quant_block_bytes(dtype))};
  if (view.shape != blocks) {
    throw SpecdError(ErrorCode::shape_mismatch, files.describe(name) + ": tensor " + name + " has shape " +
                                                    shape_text(view.shape) + ", " + format + " blocks of " +
                                                    shape_text(shape) + " need " + shape_text(blocks));
  }
  return {view.data, dtype, true};
}

// Packs straight from the mapped files, one tensor at a time; a tensor's file pages
// are dropped when the next is asked for, so the load holds the files and the packed
// model in full at no point.
InferenceWeights pack_from_files(const ModelConfig& config, const WeightFiles& files, WeightFormat format,
                                 LoadProgress& progress) {
  const TensorView* previous = nullptr;
  auto source = [&](const std::string& name, const std::vector<int64_t>& shape) {
    if (previous) files.release(*previous);
    const TensorView& view = files.tensor(name);
    previous = &view;
    progress.advance(view.nbytes);
    if (view.dtype == DType::U8) return quantized_tensor(files, view, shape);
    return RawTensor{checked_tensor(files, name, shape).data, kernel_dtype(view.dtype), true};
  };
  InferenceWeights weights = pack_inference_weights(config, source, format);
  if (previous) files.release(*previous);
  return weights;
}

struct OpenedCheckpoint {
  ModelConfig config;
  WeightFiles files;
};

// Llama 3.2 ties lm_head to the embeddings and ships no lm_head.weight; a file that
// disagrees with the config would silently use the wrong output matrix.
void check_tie_consistent(const ModelConfig& config, const WeightFiles& files, const std::filesystem::path& dir) {
  constexpr const char* kHead = "lm_head.weight";
  const std::string config_name = (dir / "config.json").string();
  if (config.tie_word_embeddings && files.contains(kHead)) {
    throw SpecdError(ErrorCode::unsupported_architecture, config_name + ": field 'tie_word_embeddings' is true, but " +
                                                              files.describe(kHead) + " holds a separate " + kHead +
                                                              "; fix the config or drop the tensor");
  }
  if (!config.tie_word_embeddings && !files.contains(kHead)) {
    throw SpecdError(ErrorCode::missing_tensor, files.source().string() + ": tensor " + kHead + " is missing (" +
                                                    config_name + ": field 'tie_word_embeddings' is false)");
  }
}

}  // namespace

kernels::Dtype kernel_dtype(DType d) {
  return d == DType::F32 ? kernels::Dtype::f32 : d == DType::F16 ? kernels::Dtype::f16 : kernels::Dtype::bf16;
}

namespace {

OpenedCheckpoint open_checkpoint(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw SpecdError(ErrorCode::missing_file, "model directory " + dir.string() + " does not exist");
  }
  ModelConfig config = load_model_config(dir / "config.json");
  WeightFiles files = WeightFiles::open(dir);
  check_tie_consistent(config, files, dir);
  return {std::move(config), std::move(files)};
}

}  // namespace

std::shared_ptr<LlamaModel> load_reference_model(const std::filesystem::path& dir) {
  if (is_gguf_path(dir))
    throw SpecdError(ErrorCode::invalid_argument, dir.string() + ": GGUF files load for inference only (load_model)");
  const OpenedCheckpoint c = open_checkpoint(dir);
  auto model = std::make_shared<LlamaModel>(c.config);
  torch::NoGradGuard no_grad;
  LoadProgress progress("loading " + dir.filename().string(), c.files.total_bytes());
  for (auto& item : model->named_parameters()) {
    copy_tensor(c.files, item.key(), item.value());
    progress.advance(c.files.tensor(item.key()).nbytes);
  }
  progress.finish();
  model->eval();
  return model;
}

std::shared_ptr<LlamaModel> load_model(const std::filesystem::path& dir, WeightFormat weights, LoadInfo* info) {
  if (is_gguf_path(dir)) return load_gguf_model(dir, weights, info);
  const auto t0 = std::chrono::steady_clock::now();
  const OpenedCheckpoint c = open_checkpoint(dir);
  auto model = std::make_shared<LlamaModel>(c.config, false);
  LoadProgress progress("loading " + dir.filename().string(), c.files.total_bytes());
  model->use_inference_weights(
      std::make_shared<InferenceWeights>(pack_from_files(c.config, c.files, weights, progress)));
  progress.finish();
  const WeightFiles& files = c.files;
  if (info) {
    info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    info->file_bytes = files.total_bytes();
    info->shard_count = files.shard_count();
  }
  return model;
}

void save_model(const LlamaModel& model, const std::filesystem::path& dir, DType storage) {
  std::filesystem::create_directories(dir);
  std::vector<std::vector<std::byte>> buffers;
  std::vector<TensorToWrite> tensors;
  const auto params = model.named_parameters();
  buffers.reserve(params.size());
  for (const auto& item : params) {
    at::Tensor t = item.value().detach().to(at::kFloat).contiguous();
    buffers.push_back(convert_from_float32(std::span<const float>(t.data_ptr<float>(), t.numel()), storage));
    tensors.push_back({item.key(), storage, t.sizes().vec(), buffers.back()});
  }
  write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  std::ofstream(dir / "config.json") << model_config_to_json(model.config());
}

}  // namespace specd
