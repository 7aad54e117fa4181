#include "engine/checkpoint.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fstream>
#include <string>
#include <vector>

#include "engine/errors.hpp"
#include "engine/llama_model.hpp"
#include "engine/model_config.hpp"

namespace specd {

namespace {

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void copy_tensor(const SafetensorsFile& file, const std::string& name, at::Tensor& param) {
  if (!file.contains(name)) {
    throw SpecdError(ErrorCode::missing_tensor, file.path().string() + ": tensor " + name + " is missing");
  }
  const TensorView& view = file.tensor(name);
  if (at::IntArrayRef(view.shape) != param.sizes()) {
    throw SpecdError(ErrorCode::shape_mismatch, file.path().string() + ": tensor " + name + " has shape " +
                                                    shape_text(view.shape) + ", the config needs " +
                                                    shape_text(param.sizes()));
  }
  convert_to_float32(view, param.data_ptr<float>());
}

}  // namespace

std::shared_ptr<LlamaModel> load_model(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw SpecdError(ErrorCode::missing_file, "model directory " + dir.string() + " does not exist");
  }
  ModelConfig config = load_model_config(dir / "config.json");
  const auto weights_path = dir / "model.safetensors";
  if (!std::filesystem::exists(weights_path)) {
    throw SpecdError(ErrorCode::missing_file, weights_path.string() + " does not exist");
  }
  SafetensorsFile file = SafetensorsFile::open(weights_path);
  auto model = std::make_shared<LlamaModel>(config);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) copy_tensor(file, item.key(), item.value());
  model->eval();
  model->fuse_projections();
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
