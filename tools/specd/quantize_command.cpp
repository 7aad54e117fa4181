// `specd quantize`: writes a checkpoint whose matrices are int8 or int4 blocks
// (docs/quantized_checkpoint.md), or a GGUF file with the tensor-type mix of one of
// llama-quantize's presets (Q4_K_M, Q5_K_M, Q6_K, Q4_0, Q8_0), so a server loads it
// without quantizing again.
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_quant_preset.hpp"
#include "engine/checkpoint/gguf_writer.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "engine/kernels/packed_weight.hpp"
#include "engine/model/gguf_export.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/gguf_vocab_export.hpp"
#include "tools/common/checkpoint_output.hpp"
#include "tools/specd/cli_common.hpp"
#include "tools/specd/pair_options.hpp"

namespace specd::cli {

namespace {

namespace fs = std::filesystem;

struct QuantizeArgs {
  std::string from, to, type;
};

void run_quantize_gguf(const QuantizeArgs& a, GgufPreset preset) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path from = a.from, to = a.to;
  if (!fs::is_directory(from))
    throw SpecdError(ErrorCode::missing_file, "--from " + from.string() + " is not a directory");
  if (to.extension() != ".gguf")
    throw SpecdError(ErrorCode::invalid_argument, "--type " + a.type + " writes a GGUF file: --to must end in .gguf");
  if (fs::exists(to)) throw SpecdError(ErrorCode::invalid_argument, "--to " + to.string() + " exists");
  GgufWriter writer;
  add_gguf_vocab(from, load_model_config(from / "config.json").vocab_size, writer);
  const fs::path partial = to.string() + ".partial";  // never a half-written file under the real name
  const GgufExportInfo info = export_gguf(from, partial, preset, writer);
  fs::rename(partial, to);
  std::string mix;
  for (const auto& [type, n] : info.tensors_of_type) mix += (mix.empty() ? "" : " + ") + std::to_string(n) + " " + type;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "specd: wrote %s: %s (%s), %.3f GB in %.1f s\n", to.c_str(), gguf_preset_name(preset),
               mix.c_str(), static_cast<double>(info.bytes) / 1e9, seconds);
}

void run_quantize(const QuantizeArgs& a) {
  if (const auto preset = gguf_preset(a.type)) return run_quantize_gguf(a, *preset);
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path from = a.from, to = a.to;
  const WeightFormat format = weight_format_of(a.type);
  if (!fs::is_directory(from))
    throw SpecdError(ErrorCode::missing_file, "--from " + from.string() + " is not a directory");
  if (fs::exists(to) && !fs::is_empty(to)) {
    throw SpecdError(ErrorCode::invalid_argument, "--to " + to.string() + " exists and is not empty");
  }
  const ModelConfig config = load_model_config(from / "config.json");
  const WeightFiles files = WeightFiles::open(from);
  fs::create_directories(to);

  std::map<std::string, std::string> metadata{{"format", "pt"}, {"specd.weights", weight_format_name(format)}};
  const std::vector<TensorSpec> specs = llama_tensor_specs(config);
  std::vector<std::vector<std::byte>> buffers;
  buffers.reserve(specs.size());
  std::vector<TensorToWrite> tensors;
  LoadProgress progress("quantizing " + from.filename().string(), files.total_bytes());
  for (const TensorSpec& spec : specs) {
    const TensorView& view = files.tensor(spec.name);
    if (view.dtype == DType::U8) {
      throw SpecdError(ErrorCode::unsupported_dtype,
                       files.describe(spec.name) + ": tensor " + spec.name + " is already quantized");
    }
    if (view.shape != spec.shape) {
      throw SpecdError(ErrorCode::shape_mismatch,
                       files.describe(spec.name) + ": tensor " + spec.name + " does not have the config's shape");
    }
    const auto q = spec.shape.size() == 2 ? quantized_dtype(format) : std::nullopt;
    if (q && spec.shape[1] % kernels::kQuantGroup != 0) {
      throw SpecdError(ErrorCode::unsupported_architecture, "tensor " + spec.name + " has " +
                                                                std::to_string(spec.shape[1]) +
                                                                " inputs, not a multiple of the 32 a block groups");
    }
    if (q) {
      buffers.emplace_back();
      append_quantized({view.data, kernel_dtype(view.dtype)}, spec.shape[0], spec.shape[1], *q, buffers.back());
      const int64_t row_bytes = static_cast<int64_t>(buffers.back().size()) / spec.shape[0];
      tensors.push_back({spec.name, DType::U8, {spec.shape[0], row_bytes}, buffers.back()});
      metadata[kBlockFormatKey + spec.name] = kernels::dtype_name(*q);
    } else {
      buffers.emplace_back(view.data, view.data + view.nbytes);
      tensors.push_back({spec.name, view.dtype, spec.shape, buffers.back()});
    }
    progress.advance(view.nbytes);
    files.release(view);
  }
  progress.finish();
  write_safetensors(to / kSingleWeightsFile, tensors, metadata);
  for (const char* name : {"config.json", "generation_config.json"}) {
    if (fs::exists(from / name)) fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing);
  }
  copy_tokenizer_files(from, to);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "specd: wrote %s: %s weights, %.2f GB (from %.2f GB) in %.1f s\n", to.c_str(),
               weight_format_name(format), static_cast<double>(fs::file_size(to / kSingleWeightsFile)) / 1e9,
               static_cast<double>(files.total_bytes()) / 1e9, seconds);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  auto* cmd = app.add_subcommand(
      "quantize", "Write a checkpoint with int8 or int4 weights, or a GGUF file, that loads without quantizing again");
  cmd->add_option("--from", args->from, "model directory with F32, F16 or BF16 weights")->required();
  cmd->add_option("--to", args->to, "new (or empty) directory for int8/int4; a new FILE.gguf for the GGUF types")
      ->required();
  cmd->add_option("--type", args->type,
                  "int8 (Q8_0 blocks) or int4 (Q4_0 blocks) as safetensors; q4_k_m, q5_k_m, q6_k, q4_0 or q8_0 as GGUF "
                  "with llama-quantize's tensor-type mix")
      ->required()
      ->check(CLI::IsMember({"int8", "int4", "q4_k_m", "q5_k_m", "q6_k", "q4_0", "q8_0"}, CLI::ignore_case));
  cmd->callback([args] { run_quantize(*args); });
}

}  // namespace specd::cli
