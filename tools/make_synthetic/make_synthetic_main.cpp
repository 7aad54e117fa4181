// specd_make_synthetic: writes a randomly initialised checkpoint with exactly the
// configuration of Llama-3.2-1B-Instruct or Llama-3.2-3B-Instruct (BF16, tied embeddings,
// llama3 RoPE scaling, sharded like the HF release), or of a Qwen2.5 / Qwen3 model (their
// q/k/v biases, their q/k norms), for speed measurements only: the weights are noise. Streams tensor by tensor, so
// memory stays small for any size.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/load_progress.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/sharded_writer.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"
#include "tools/common/checkpoint_output.hpp"

namespace fs = std::filesystem;
using namespace specd;

namespace {

// Dimensions from ../shared/seeds/001-phase11-engine-design.txt and the HF config.json files.
ModelConfig llama32_config(const std::string& preset) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.vocab_size = 128256;
  c.intermediate_size = 8192;
  c.num_key_value_heads = 8;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.rope_scaling = RopeScaling{"llama3", 32.0, 1.0, 4.0, 8192};
  c.tie_word_embeddings = true;
  c.hidden_act = "silu";
  c.bos_token_id = 128000;
  c.eos_token_ids = {128001, 128008, 128009};
  c.torch_dtype = "bfloat16";
  if (preset == "1b") {
    c.hidden_size = 2048, c.num_hidden_layers = 16, c.num_attention_heads = 32, c.head_dim = 64;
  } else {
    c.hidden_size = 3072, c.num_hidden_layers = 28, c.num_attention_heads = 24, c.head_dim = 128;
  }
  return c;
}

// Qwen2.5 (q/k/v biases) and Qwen3 (q/k norms) as their HF config.json files give them:
// the small ones are the drafts users pair with the 7B/8B targets.
struct QwenShape {
  const char* preset;
  int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
  bool tied;
};
constexpr QwenShape kQwenShapes[] = {
    {"qwen2.5-0.5b", 896, 24, 14, 2, 64, 4864, 151936, true},
    {"qwen2.5-1.5b", 1536, 28, 12, 2, 128, 8960, 151936, true},
    {"qwen2.5-7b", 3584, 28, 28, 4, 128, 18944, 152064, false},
    {"qwen3-0.6b", 1024, 28, 16, 8, 128, 3072, 151936, true},
    {"qwen3-1.7b", 2048, 28, 16, 8, 128, 6144, 151936, true},
    {"qwen3-8b", 4096, 36, 32, 8, 128, 12288, 151936, false},
};

ModelConfig qwen_config(const QwenShape& s) {
  const bool qwen3 = std::string_view(s.preset).starts_with("qwen3");
  ModelConfig c;
  c.architecture = qwen3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM";
  c.model_type = qwen3 ? "qwen3" : "qwen2";
  c.qkv_bias = !qwen3;
  c.qk_norm = qwen3;
  c.vocab_size = s.vocab;
  c.hidden_size = s.hidden;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.head_dim = s.head_dim;
  c.intermediate_size = s.intermediate;
  c.max_position_embeddings = qwen3 ? 40960 : 32768;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = s.tied;
  c.bos_token_id = 151643;
  c.eos_token_ids = {151645};  // <|im_end|>, as the instruct models' configs
  c.torch_dtype = "bfloat16";
  return c;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names{"1b", "3b"};
  for (const QwenShape& s : kQwenShapes) names.push_back(s.preset);
  return names;
}

ModelConfig preset_config(const std::string& preset) {
  for (const QwenShape& s : kQwenShapes)
    if (preset == s.preset) return qwen_config(s);
  return llama32_config(preset);
}

void write_generation_config(const fs::path& dir, const ModelConfig& c) {
  // Llama-3.2-*-Instruct's generation_config.json (Qwen's instruct models' are alike).
  const boost::json::object config{{"bos_token_id", *c.bos_token_id},
                                   {"do_sample", true},
                                   {"eos_token_id", boost::json::array(c.eos_token_ids.begin(), c.eos_token_ids.end())},
                                   {"temperature", 0.6},
                                   {"top_p", 0.9}};
  std::ofstream(dir / "generation_config.json") << specd::serialize_json_indented(config) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Writes a random-weight checkpoint shaped exactly like Llama-3.2-1B/3B-Instruct, Qwen2.5 or Qwen3 (speed tests "
      "only)"};
  std::string preset, out, tokenizer_dir;
  uint64_t seed = 1;
  int64_t layers = 0;
  double max_shard_gb = 5.0, std_dev = 0.02;
  app.add_option("--preset", preset, "1b or 3b (Llama 3.2), qwen2.5-0.5b|1.5b|7b, qwen3-0.6b|1.7b|8b")
      ->required()
      ->check(CLI::IsMember(preset_names()));
  app.add_option("--layers", layers, "fewer layers than the preset's (a small checkpoint of its shape for tests)")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", out, "output directory (outside the source tree: never commit these)")->required();
  app.add_option("--tokenizer-dir", tokenizer_dir, "copy tokenizer.json and friends from here");
  app.add_option("--seed", seed, "random seed")->capture_default_str();
  app.add_option("--max-shard-gb", max_shard_gb, "largest shard in GB (10^9 bytes), as HF's max_shard_size")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1000.0));
  app.add_option("--std", std_dev, "standard deviation of the weight matrices (norms are 1)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = output_dir_outside(out, SPECD_SOURCE_DIR);
    ModelConfig config = preset_config(preset);
    if (layers > 0) config.num_hidden_layers = std::min(layers, config.num_hidden_layers);
    const std::vector<TensorSpec> specs = llama_tensor_specs(config);
    uint64_t total = 0;
    for (const auto& s : specs) total += uint64_t(s.numel()) * 2;
    fs::create_directories(dir);
    LoadProgress progress("writing " + preset, total, 0);
    // One generator per tensor, seeded from its position: the values do not depend on chunking.
    size_t current = specs.size();
    at::Generator gen;
    auto fill = [&](const TensorSpec& spec, int64_t first, std::span<float> chunk) {
      at::Tensor t = at::from_blob(chunk.data(), {static_cast<int64_t>(chunk.size())}, at::kFloat);
      if (spec.shape.size() == 1 && !spec.name.ends_with(".bias")) {
        t.fill_(1.0f);  // RMSNorm weights start at one, as in transformers
        return;
      }
      const size_t index = static_cast<size_t>(&spec - specs.data());
      if (index != current || first == 0) {
        current = index;
        gen = at::make_generator<at::CPUGeneratorImpl>(seed * 1000003 + index);
      }
      t.normal_(0.0, std_dev, gen);
    };
    const WrittenWeights written =
        write_weights_streaming(dir, specs, DType::BF16, static_cast<uint64_t>(max_shard_gb * 1e9), fill,
                                [&](uint64_t bytes) { progress.advance(bytes); });
    progress.finish();
    std::ofstream(dir / "config.json") << model_config_to_json(config);
    write_generation_config(dir, config);
    if (!tokenizer_dir.empty()) {
      const int copied = copy_tokenizer_files(tokenizer_dir, dir);
      std::fprintf(stderr, "copied %d tokenizer file(s) from %s\n", copied, tokenizer_dir.c_str());
    }
    const int64_t params = count_parameters(config).total;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::puts(specd::serialize_json(boost::json::object{{"preset", preset},
                                                        {"dir", dir.string()},
                                                        {"parameters", params},
                                                        {"bytes", written.tensor_bytes},
                                                        {"shards", written.files.size()},
                                                        {"seconds", specd::round_to(seconds, 1)}})
                  .c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_make_synthetic: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
