// Writing and reading HF model directories: identical logits after a round trip, and
// a clear error (code plus the file and problem) for every kind of broken checkpoint.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fstream>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "tests/support/sharded_models.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::random_model;
using specd::testing::TempDir;
using specd::testing::tiny_config;
using specd::testing::write_sharded;

namespace {

at::Tensor logits_of(LlamaModel& m) {
  torch::InferenceMode guard;
  return m.forward_full(at::arange(0, 40, at::kLong).remainder(97).unsqueeze(0));
}

// Runs load_model and returns the error it raised (fails the test if none).
SpecdError load_error(const std::filesystem::path& dir) {
  try {
    load_model(dir);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("load_model accepted a broken checkpoint");
  return SpecdError(ErrorCode::invalid_argument, "unreachable");
}

void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("an F32 checkpoint round trip gives bit-identical logits, tied and untied") {
  for (bool tied : {true, false}) {
    CAPTURE(tied);
    TempDir dir;
    auto model = random_model(tiny_config(tied), 21);
    save_model(*model, dir.path, DType::F32);
    auto loaded = load_reference_model(dir.path);
    CHECK(loaded->config().tie_word_embeddings == tied);
    CHECK(loaded->parameter_count() == model->parameter_count());
    CHECK(at::equal(logits_of(*model), logits_of(*loaded)));
  }
}

TEST_CASE("F16 and BF16 checkpoints load the rounded weights exactly") {
  for (DType storage : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(storage));
    TempDir dir;
    auto model = random_model(tiny_config(), 22);
    save_model(*model, dir.path, storage);
    auto loaded = load_reference_model(dir.path);
    const auto torch_type = storage == DType::F16 ? at::kHalf : at::kBFloat16;
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.copy_(p.to(torch_type).to(at::kFloat));
    }
    CHECK(at::equal(logits_of(*model), logits_of(*loaded)));
  }
}

TEST_CASE("broken checkpoints give an error naming the file and the problem") {
  TempDir dir;
  auto model = random_model(tiny_config(false), 23);
  save_model(*model, dir.path, DType::F32);
  const auto config = dir.path / "config.json", weights = dir.path / "model.safetensors";
  const std::string good_config = read_bytes(config), good_weights = read_bytes(weights);
  auto restore = [&] {
    write_text(config, good_config);
    std::ofstream(weights, std::ios::binary) << good_weights;
  };

  SUBCASE("missing directory") {
    auto e = load_error(dir.path / "nope");
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(std::string(e.what()).find("nope") != std::string::npos);
  }
  SUBCASE("missing config.json") {
    std::filesystem::remove(config);
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(std::string(e.what()).find("config.json") != std::string::npos);
  }
  SUBCASE("missing model.safetensors") {
    std::filesystem::remove(weights);
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(std::string(e.what()).find("model.safetensors") != std::string::npos);
  }
  SUBCASE("malformed config.json") {
    write_text(config, "{\"hidden_size\": 48,");
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::malformed_json);
    CHECK(std::string(e.what()).find("config.json") != std::string::npos);
  }
  SUBCASE("missing tensor (lm_head in an untied model)") {
    ModelConfig tied = tiny_config(true);
    auto tied_model = random_model(tied, 24);
    save_model(*tied_model, dir.path, DType::F32);
    write_text(config, good_config);  // the untied config needs lm_head.weight
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_tensor);
    CHECK(std::string(e.what()).find("lm_head.weight") != std::string::npos);
    CHECK(std::string(e.what()).find("model.safetensors") != std::string::npos);
  }
  SUBCASE("wrong shape") {
    ModelConfig wider = tiny_config(false);
    wider.intermediate_size = 128;
    write_text(config, model_config_to_json(wider));
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::shape_mismatch);
    CHECK(std::string(e.what()).find("mlp") != std::string::npos);
    CHECK(std::string(e.what()).find("[96, 48]") != std::string::npos);
  }
  SUBCASE("unknown dtype") {
    std::string bytes = good_weights;
    const auto at = bytes.find("\"F32\"");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 5, "\"I32\"");
    std::ofstream(weights, std::ios::binary) << bytes;
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::unsupported_dtype);
    CHECK(std::string(e.what()).find("I32") != std::string::npos);
  }
  SUBCASE("truncated safetensors") {
    std::ofstream(weights, std::ios::binary) << good_weights.substr(0, good_weights.size() - 100);
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::truncated_file);
    CHECK(std::string(e.what()).find("model.safetensors") != std::string::npos);
  }
  SUBCASE("unsupported architecture") {
    std::string text = good_config;
    const auto at = text.find("LlamaForCausalLM");
    REQUIRE(at != std::string::npos);
    text.replace(at, 16, "MistralForCausal");
    write_text(config, text);
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(std::string(e.what()).find("MistralForCausal") != std::string::npos);
  }
  restore();
  CHECK(load_model(dir.path)->parameter_count() == model->parameter_count());
}

TEST_CASE("a sharded, tied checkpoint gives the logits of the single-file, untied writing of the same weights") {
  auto tied = random_model(tiny_config(true), 31);
  auto untied = std::make_shared<LlamaModel>(tiny_config(false));
  {
    torch::NoGradGuard no_grad;
    auto dst = untied->named_parameters();
    for (const auto& item : tied->named_parameters()) dst[item.key()].copy_(item.value());
    dst["lm_head.weight"].copy_(tied->named_parameters()["model.embed_tokens.weight"]);
  }
  untied->eval();
  TempDir sharded_dir, single_dir;
  // 8 KiB shards: the embeddings get one of their own, the layers several.
  const auto written = write_sharded(*tied, sharded_dir.path, DType::F32, 8 << 10);
  REQUIRE(written.files.size() > 3);
  save_model(*untied, single_dir.path, DType::F32);
  LoadInfo info;
  (void)load_model(sharded_dir.path, WeightFormat::stored, &info);
  CHECK(info.shard_count == written.files.size());
  CHECK(info.seconds > 0);
  auto from_shards = load_reference_model(sharded_dir.path);
  auto from_single = load_reference_model(single_dir.path);
  CHECK(from_shards->config().tie_word_embeddings);
  CHECK_FALSE(from_single->config().tie_word_embeddings);
  CHECK(at::equal(logits_of(*from_shards), logits_of(*from_single)));
  CHECK(at::equal(logits_of(*from_shards), logits_of(*tied)));
}

TEST_CASE("sharded BF16 weights are converted to float32 once, exactly, by the reference load") {
  auto model = random_model(tiny_config(true), 32);
  TempDir dir;
  write_sharded(*model, dir.path, DType::BF16, 16 << 10);
  auto loaded = load_reference_model(dir.path);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.copy_(p.to(at::kBFloat16).to(at::kFloat));
  }
  for (const auto& p : loaded->parameters()) CHECK(p.element_size() == 4);  // float32, not bf16
  CHECK(at::equal(logits_of(*model), logits_of(*loaded)));
}

TEST_CASE("tie_word_embeddings that disagrees with the files is an error naming the field") {
  TempDir dir;
  SUBCASE("tied config, but the file holds lm_head.weight") {
    save_model(*random_model(tiny_config(false), 33), dir.path, DType::F32);
    write_text(dir.path / "config.json", model_config_to_json(tiny_config(true)));
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(std::string(e.what()).find("tie_word_embeddings") != std::string::npos);
    CHECK(std::string(e.what()).find("lm_head.weight") != std::string::npos);
  }
  SUBCASE("untied config, but no lm_head.weight in the shards") {
    write_sharded(*random_model(tiny_config(true), 34), dir.path, DType::F32, 8 << 10);
    write_text(dir.path / "config.json", model_config_to_json(tiny_config(false)));
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_tensor);
    CHECK(std::string(e.what()).find("tie_word_embeddings") != std::string::npos);
    CHECK(std::string(e.what()).find("model.safetensors.index.json") != std::string::npos);
  }
}

TEST_CASE("every unsupported architecture setting in config.json fails the load naming its field") {
  TempDir dir;
  save_model(*random_model(tiny_config(true), 35), dir.path, DType::F32);
  const std::string good = read_bytes(dir.path / "config.json");
  struct Case {
    std::string from, to, field;
  };
  const std::vector<Case> cases{
      {"\"LlamaForCausalLM\"", "\"MistralForCausalLM\"", "architectures[0]"},
      {"\"model_type\": \"llama\"", "\"model_type\": \"mistral\"", "model_type"},
      {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act"},
      {"\"hidden_size\"", "\"attention_bias\": true,\n  \"hidden_size\"", "attention_bias"},
      {"\"hidden_size\"", "\"mlp_bias\": true,\n  \"hidden_size\"", "mlp_bias"},
      {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}",
       "rope_scaling.rope_type"},
      {"\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}", "rope_scaling.type"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    std::string text = good;
    const auto at = text.find(c.from);
    REQUIRE(at != std::string::npos);
    text.replace(at, c.from.size(), c.to);
    write_text(dir.path / "config.json", text);
    auto e = load_error(dir.path);
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(std::string(e.what()).find("'" + c.field + "'") != std::string::npos);
  }
}

TEST_CASE("the inference load keeps each dtype and its logits match the reference load's") {
  // Tolerances, relative to the largest logit, between the inference load and the
  // reference load, both through the cached forward: F32 and F16 weights run with float
  // activations (summation order only); BF16 weights with activations rounded to BF16
  // (2^-8 relative each) on AVX-512 BF16. Against the reference's full forward (F32 keys
  // and values) the cache's BF16 keys and values add their rounding (2^-9 relative): up
  // to 1.7% of the largest logit on this model, for each dtype; 3e-2 is allowed.
  constexpr double kBf16KvTolerance = 3e-2;
  for (auto [storage, tolerance] : {std::pair{DType::F32, 1e-4}, {DType::F16, 1e-4}, {DType::BF16, 3e-2}}) {
    CAPTURE(dtype_name(storage));
    TempDir dir;
    auto model = random_model(tiny_config(true), 33);
    save_model(*model, dir.path, storage);
    auto reference = load_reference_model(dir.path);
    auto loaded = load_model(dir.path);
    CHECK_FALSE(loaded->has_parameters());
    REQUIRE(loaded->inference_weights() != nullptr);
    const double bytes_per_weight =
        static_cast<double>(loaded->inference_weights()->bytes()) / loaded->parameter_count();
    CHECK(bytes_per_weight < dtype_size(storage) * 1.25);  // packing pads blocks of 16 outputs only
    CHECK(loaded->parameter_count() == model->parameter_count());
    at::Tensor tokens = at::arange(0, 40, at::kLong).remainder(97).unsqueeze(0);
    KvCache cache(loaded->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
    const int32_t slot = 0;
    at::Tensor cached = loaded->forward({tokens, {slot}, {40}}, cache, LogitsFor::all_positions);
    at::Tensor full = reference->forward_full(tokens);
    const double scale = full.abs().max().item<double>();
    CHECK((cached - full).abs().max().item<double>() / scale < kBf16KvTolerance);
    KvCache reference_cache(loaded->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
    at::Tensor reference_cached = reference->forward({tokens, {slot}, {40}}, reference_cache, LogitsFor::all_positions);
    CHECK((cached - reference_cached).abs().max().item<double>() / scale < tolerance);
  }
}
