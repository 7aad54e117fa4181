// tools/pad_model: the committed pair padded to larger shapes computes the same function
// (logits within 1e-4 relative, identical greedy tokens on held-out prompts), the padded
// shapes reach the Llama 3.2 parameter counts, and the new weights sit where they add nothing.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fstream>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/tiny_models.hpp"
#include "tools/pad_model/model_padder.hpp"

using namespace specd;
using specd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kTarget = fs::path(SPECD_SOURCE_DIR) / "models/target";
const fs::path kDraft = fs::path(SPECD_SOURCE_DIR) / "models/draft";
constexpr size_t kPrompts = 4;
constexpr int32_t kGreedyTokens = 32;

// The first lines of conf/bench_prompts.txt (held-out paragraphs; "\n" escapes newlines).
std::vector<std::string> held_out_prompts(size_t count) {
  std::ifstream in(fs::path(SPECD_SOURCE_DIR) / "conf/bench_prompts.txt");
  std::vector<std::string> prompts;
  for (std::string line; prompts.size() < count && std::getline(in, line);) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      const bool escape = line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n';
      text += escape ? '\n' : line[i];
      i += escape;
    }
    prompts.push_back(text);
  }
  REQUIRE(prompts.size() == count);
  return prompts;
}

// The stated measure: max |a - b| over every position and token, over max |a|.
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / a.abs().max().item<double>();
}

// Every position's logits through the inference path (forward on a KV cache).
at::Tensor all_logits(LlamaModel& model, const std::vector<int32_t>& prompt) {
  KvCache cache(model.config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  const int32_t slot = 0;
  const int64_t length = static_cast<int64_t>(prompt.size());
  ForwardBatch batch{
      at::tensor(std::vector<int64_t>(prompt.begin(), prompt.end()), at::kLong).unsqueeze(0), {slot}, {length}};
  return model.forward(batch, cache, LogitsFor::all_positions);
}

std::vector<int32_t> greedy(LlamaModel& model, const std::vector<int32_t>& prompt) {
  KvCache cache(model.config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = kGreedyTokens;  // no eos_ids: always the full length
  return generate_target_only(model, cache, request).tokens;
}

// Pads `from` to `shape` and checks the padded model against the original on the prompts.
PadResult check_same_function(const fs::path& from, const PadShape& shape, const fs::path& to) {
  const PadResult result = pad_model(from, to, PadOptions{shape});
  auto original = load_model(from);
  auto padded = load_model(to);
  const auto tokenizer = load_tokenizer(to);  // the copied files
  torch::InferenceMode guard;
  for (const std::string& text : held_out_prompts(kPrompts)) {
    const std::vector<int32_t> prompt = tokenizer->encode(text, true);
    CAPTURE(text);
    const double error = relative_error(all_logits(*original, prompt), all_logits(*padded, prompt));
    CAPTURE(error);
    CHECK(error < 1e-4);
    const std::vector<int32_t> expected = greedy(*original, prompt);
    CHECK(expected.size() == size_t(kGreedyTokens));
    CHECK(greedy(*padded, prompt) == expected);
  }
  return result;
}

at::Tensor read_tensor(const WeightFiles& files, const std::string& name) {
  const TensorView& view = files.tensor(name);
  at::Tensor t = at::empty(view.shape, at::kFloat);
  convert_to_float32(view, t.data_ptr<float>());
  return t;
}

ModelConfig config_of(const fs::path& dir) { return load_model_config(dir / "config.json"); }

}  // namespace

TEST_CASE("the presets keep head_dim and the query-per-KV ratio and reach the Llama 3.2 sizes") {
  const ModelConfig target = padded_config(config_of(kTarget), *pad_preset("llama-3.2-3b"));
  CHECK(target.hidden_size == 3072);
  CHECK(target.num_hidden_layers == 28);
  CHECK(target.intermediate_size == 8192);
  CHECK(target.head_dim == 64);
  CHECK(target.num_attention_heads == 48);
  CHECK(target.num_key_value_heads == 16);  // 3 query heads per KV head, as the source
  CHECK(target.rms_norm_eps == doctest::Approx(1e-5 * 384 / 3072).epsilon(1e-12));
  CHECK(target.vocab_size == 2048);
  // Llama-3.2-3B itself: 24 heads and 8 KV heads of 128, the same matrix sizes.
  ModelConfig llama3b = target;
  llama3b.num_attention_heads = 24, llama3b.num_key_value_heads = 8, llama3b.head_dim = 128;
  CHECK(count_parameters(target).non_embedding == 2'818'747'392);
  CHECK(count_parameters(llama3b).non_embedding == 2'818'747'392);

  const ModelConfig draft = padded_config(config_of(kDraft), *pad_preset("llama-3.2-1b"));
  CHECK(draft.head_dim == 32);
  CHECK(draft.num_attention_heads == 64);
  CHECK(draft.num_key_value_heads == 32);  // 2 per KV head: twice Llama-3.2-1B's K/V width
  ModelConfig llama1b = draft;
  llama1b.num_attention_heads = 32, llama1b.num_key_value_heads = 8, llama1b.head_dim = 64;
  CHECK(count_parameters(draft).non_embedding == 1'006'700'544);
  CHECK(count_parameters(llama1b).non_embedding == 973'146'112);
}

TEST_CASE("shapes that cannot hold the source are refused") {
  const ModelConfig source = config_of(kTarget);
  CHECK_THROWS_AS(padded_config(source, {640, 1024, 6}), SpecdError);  // 10 heads: not 3 per KV head
  CHECK_THROWS_AS(padded_config(source, {192, 1024, 6}), SpecdError);
  CHECK_THROWS_AS(padded_config(source, {768, 512, 6}), SpecdError);
  CHECK_THROWS_AS(padded_config(source, {768, 1024, 5}), SpecdError);
  CHECK(norm_scale_is_power_of_two(384, 1536));
  CHECK(norm_scale_is_power_of_two(128, 2048));
  CHECK(norm_scale_is_power_of_two(384, 384));
  CHECK_FALSE(norm_scale_is_power_of_two(384, 3072));
  CHECK_FALSE(norm_scale_is_power_of_two(384, 576));
}

TEST_CASE("the target padded 384 -> 1536 (D/d = 4) keeps its logits and greedy tokens, norms in F16") {
  TempDir dir;
  const PadResult r = check_same_function(kTarget, {1536, 1024, 6}, dir.path);
  CHECK_FALSE(r.f32_norms);
  const WeightFiles files = WeightFiles::open(dir.path);
  CHECK(files.tensor("model.norm.weight").dtype == DType::F16);
  CHECK(files.tensor("model.layers.0.self_attn.q_proj.weight").shape == std::vector<int64_t>{1536, 1536});
}

TEST_CASE("the target padded 384 -> 576 with extra layers and MLP keeps its function, norms in F32") {
  TempDir dir;
  const PadResult r = check_same_function(kTarget, {576, 1536, 8}, dir.path);
  CHECK(r.f32_norms);
  const WeightFiles files = WeightFiles::open(dir.path);
  const WeightFiles source = WeightFiles::open(kTarget);
  CHECK(files.tensor("model.layers.7.input_layernorm.weight").dtype == DType::F32);
  CHECK(files.tensor("model.layers.0.mlp.up_proj.weight").dtype == DType::F16);
  // The source block is stored bit for bit; what is new around it adds nothing.
  const at::Tensor q = read_tensor(files, "model.layers.0.self_attn.q_proj.weight");
  CHECK(
      at::equal(q.narrow(0, 0, 384).narrow(1, 0, 384), read_tensor(source, "model.layers.0.self_attn.q_proj.weight")));
  CHECK(at::all(q.narrow(0, 0, 384).narrow(1, 384, 192) == 0).item<bool>());
  CHECK(at::any(q.narrow(0, 384, 192) != 0).item<bool>());  // the extra heads compute
  const at::Tensor o = read_tensor(files, "model.layers.0.self_attn.o_proj.weight");
  CHECK(at::all(o.narrow(1, 384, 192) == 0).item<bool>());
  CHECK(at::all(o.narrow(0, 384, 192) == 0).item<bool>());
  const at::Tensor down = read_tensor(files, "model.layers.0.mlp.down_proj.weight");
  CHECK(at::all(down.narrow(1, 1024, 512) == 0).item<bool>());
  CHECK(at::any(read_tensor(files, "model.layers.7.mlp.gate_proj.weight") != 0).item<bool>());
  CHECK(at::all(read_tensor(files, "model.layers.7.mlp.down_proj.weight") == 0).item<bool>());
  CHECK(at::all(read_tensor(files, "model.layers.7.self_attn.o_proj.weight") == 0).item<bool>());
  CHECK(at::all(read_tensor(files, "model.embed_tokens.weight").narrow(1, 384, 192) == 0).item<bool>());
}

TEST_CASE("the draft padded 128 -> 512 with extra layers keeps its function") {
  TempDir dir;
  const PadResult r = check_same_function(kDraft, {512, 1024, 3}, dir.path);
  CHECK(r.config.num_attention_heads == 16);
  CHECK(r.config.num_key_value_heads == 8);
  CHECK(fs::exists(dir.path / "tokenizer.model"));
  CHECK(fs::exists(dir.path / "generation_config.json"));
}

TEST_CASE("a Qwen folder is refused naming its model_type: its biases and q/k norms have no padding rule") {
  TempDir dir;
  const fs::path qwen2 = fs::path(SPECD_SOURCE_DIR) / "../shared/data/qwen/qwen2-tiny";
  try {
    (void)pad_model(qwen2, dir.path / "out", PadOptions{PadShape{256, 512, 2}});
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(e.message() ==
          (qwen2 / "config.json").string() + ": model_type is 'qwen2'; specd_pad_model pads Llama models only");
  }
  CHECK_FALSE(fs::exists(dir.path / "out"));
}
