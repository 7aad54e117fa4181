// specd_pad_model: embeds a trained model (e.g. the committed pair) into a larger Llama
// shape without changing its function, so real-size speed can be measured with real
// acceptance. See tools/pad_model/model_padder.hpp for how.
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/base/errors.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"
#include "tools/common/checkpoint_output.hpp"
#include "tools/pad_model/model_padder.hpp"

namespace fs = std::filesystem;
using namespace specd;

namespace {

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return std::nullopt;  // keep
}

// The preset's sizes, each replaced by an explicit option when given.
PadShape shape_from(const std::string& like, int64_t hidden, int64_t intermediate, int64_t layers) {
  PadShape shape = like.empty() ? PadShape{} : *pad_preset(like);
  if (hidden) shape.hidden = hidden;
  if (intermediate) shape.intermediate = intermediate;
  if (layers) shape.layers = layers;
  if (!shape.hidden || !shape.intermediate || !shape.layers)
    throw SpecdError(ErrorCode::invalid_argument, "give --like, or all of --hidden, --intermediate and --layers");
  return shape;
}

void print_result(const PadResult& r, const fs::path& dir, double seconds) {
  const ModelConfig& c = r.config;
  std::puts(serialize_json(boost::json::object{{"dir", dir.string()},
                                               {"hidden", c.hidden_size},
                                               {"intermediate", c.intermediate_size},
                                               {"layers", c.num_hidden_layers},
                                               {"heads", c.num_attention_heads},
                                               {"kv_heads", c.num_key_value_heads},
                                               {"head_dim", c.head_dim},
                                               {"parameters", r.parameters.total},
                                               {"non_embedding_parameters", r.parameters.non_embedding},
                                               {"f32_norms", r.f32_norms},
                                               {"bytes", r.written.tensor_bytes},
                                               {"shards", r.written.files.size()},
                                               {"seconds", round_to(seconds, 1)}})
                .c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pads a trained Llama model to a larger shape without changing its outputs (zero padding)"};
  std::string from, to, like, dtype = "keep";
  int64_t hidden = 0, intermediate = 0, layers = 0;
  PadOptions options;
  double max_shard_gb = 5.0;
  app.add_option("--from", from, "source model directory")->required();
  app.add_option("--to", to, "output directory (outside the source tree: never commit these)")->required();
  app.add_option("--like", like, "preset shape")->check(CLI::IsMember({"llama-3.2-3b", "llama-3.2-1b"}));
  app.add_option("--hidden", hidden, "hidden size (overrides the preset)");
  app.add_option("--intermediate", intermediate, "MLP size (overrides the preset)");
  app.add_option("--layers", layers, "layer count (overrides the preset)");
  app.add_option("--dtype", dtype, "keep (the source's), f32, f16 or bf16")
      ->capture_default_str()
      ->check(CLI::IsMember({"keep", "f32", "f16", "bf16"}));
  app.add_option("--seed", options.seed, "seed of the new (harmless) random weights")->capture_default_str();
  app.add_option("--std", options.std_dev, "standard deviation of the new random weights")->capture_default_str();
  app.add_option("--max-shard-gb", max_shard_gb, "largest shard in GB (10^9 bytes)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1000.0));
  CLI11_PARSE(app, argc, argv);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = output_dir_outside(to, SPECD_SOURCE_DIR);
    options.shape = shape_from(like, hidden, intermediate, layers);
    options.dtype = parse_dtype(dtype);
    options.max_shard_bytes = static_cast<uint64_t>(max_shard_gb * 1e9);
    const PadResult result = pad_model(from, dir, options);
    print_result(result, dir, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_pad_model: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
