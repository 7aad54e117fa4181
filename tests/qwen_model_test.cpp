// Qwen2 (biases on q, k, v) and Qwen3 (RMSNorm on each q and k head before RoPE) from
// Hugging Face folders and from llama.cpp's GGUF files (../shared/data/qwen, README
// there): the configs read, the extra tensors loaded, and greedy ids that agree with
// llama.cpp's on at least 5 of the 6 prompts for each architecture and each form, with an
// independent float64 forward (tests/support/float64_forward.hpp), and with speculation.
#include "tests/support/doctest_torch.hpp"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/model/gguf_model.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/float64_forward.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/llama_cpp_greedy.hpp"

namespace fs = std::filesystem;
using namespace specd;
using namespace specd::testing;

namespace {

const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "../shared/data/qwen";

struct LlamaCppRun {
  std::string file, prompt;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

std::vector<LlamaCppRun> llama_cpp_runs() {
  simdjson::dom::parser parser;
  std::vector<LlamaCppRun> out;
  for (simdjson::dom::element e : parser.load((kFixtures / "llama_cpp_greedy_qwen.json").string()).get_array()) {
    out.push_back({std::string(e["file"].get_string().value()), std::string(e["prompt"].get_string().value()),
                   ids_of(e["prompt_ids"]), ids_of(e["greedy_ids"])});
  }
  return out;
}

// "qwen2-tiny-f16.gguf" -> "qwen2-tiny", the folder it was converted from.
fs::path folder_of(const std::string& gguf) { return kFixtures / gguf.substr(0, gguf.find("-f16")); }

}  // namespace

TEST_CASE("Qwen2 and Qwen3 configs read their architecture's additions; what specd cannot run is refused") {
  const ModelConfig q2 = load_model_config(kFixtures / "qwen2-tiny/config.json");
  CHECK(q2.model_type == "qwen2");
  CHECK(q2.qkv_bias);
  CHECK_FALSE(q2.qk_norm);
  CHECK(q2.head_dim == 32);
  const ModelConfig q3 = load_model_config(kFixtures / "qwen3-tiny/config.json");
  CHECK(q3.model_type == "qwen3");
  CHECK(q3.qk_norm);
  CHECK_FALSE(q3.qkv_bias);

  auto error_of = [](const std::string& json) {
    try {
      (void)parse_model_config(json, "config.json");
    } catch (const SpecdError& e) {
      return std::pair{e.code(), e.message()};
    }
    return std::pair{ErrorCode::internal, std::string("no error")};
  };
  const std::string base =
      R"({"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 2, )";
  // Qwen3's attention_bias would bias o_proj as well: refused, not ignored.
  auto [code, message] =
      error_of(base + R"("architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": true})");
  CHECK(code == ErrorCode::unsupported_architecture);
  CHECK(message.find("'attention_bias'") != std::string::npos);
  std::tie(code, message) =
      error_of(base + R"("architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "use_sliding_window": true})");
  CHECK(code == ErrorCode::unsupported_architecture);
  CHECK(message.find("'use_sliding_window'") != std::string::npos);
  std::tie(code, message) = error_of(base + R"("architectures": ["Qwen2ForCausalLM"], "model_type": "llama"})");
  CHECK(code == ErrorCode::unsupported_architecture);
  CHECK(message == "config.json: field 'model_type' is 'llama'; Qwen2ForCausalLM needs 'qwen2'");
  // transformers' Qwen3Config: head_dim 128 when absent, whatever hidden_size / heads is.
  const ModelConfig no_head_dim =
      parse_model_config(base + R"("architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"})", "config.json");
  CHECK(no_head_dim.head_dim == 128);
}

TEST_CASE("a Qwen folder and its GGUF load the same biases and q/k norms") {
  for (const char* name : {"qwen2-tiny", "qwen3-tiny"}) {
    CAPTURE(name);
    const auto folder = load_model(kFixtures / name);
    const auto gguf = load_model(kFixtures / (std::string(name) + "-f16.gguf"));
    CHECK(gguf->config().model_type == folder->config().model_type);
    CHECK(gguf->config().qkv_bias == folder->config().qkv_bias);
    CHECK(gguf->config().qk_norm == folder->config().qk_norm);
    const InferenceWeights& a = *folder->inference_weights();
    const InferenceWeights& b = *gguf->inference_weights();
    REQUIRE(a.layers.size() == 2);
    for (size_t l = 0; l < a.layers.size(); ++l) {
      CHECK(a.layers[l].qkv_bias.size() == (folder->config().qkv_bias ? 256u : 0u));
      CHECK(a.layers[l].q_norm.size() == (folder->config().qk_norm ? 32u : 0u));
      // GGUF holds the biases and norms as F32 of the F16 values: equal.
      CHECK(a.layers[l].qkv_bias == b.layers[l].qkv_bias);
      CHECK(a.layers[l].q_norm == b.layers[l].q_norm);
      CHECK(a.layers[l].k_norm == b.layers[l].k_norm);
    }
    // The GGUF's q/k rows are not permuted for Qwen (llama.cpp rotates halves, as HF does):
    // the same prompt gives the same logits from either form.
    const std::vector<int32_t> prompt{1, 614, 2017, 2015, 2018, 2035, 435, 2015, 2007};
    CHECK(llama_cpp_greedy(*folder, prompt) == llama_cpp_greedy(*gguf, prompt));
  }
}

// (The folders' tokenizer.model, run by the SentencePiece library, splits the first word
// differently from llama.cpp's SPM tokenizer on the GGUF: the committed pair's tokenizer
// does the same; the greedy tests below feed llama.cpp's prompt ids to both forms.)
TEST_CASE("the tokenizers of the Qwen GGUF fixtures give llama.cpp's prompt ids") {
  for (const LlamaCppRun& run : llama_cpp_runs()) {
    CAPTURE(run.file);
    CAPTURE(run.prompt);
    CHECK(load_tokenizer(kFixtures / run.file)->encode(run.prompt, true) == run.prompt_ids);
  }
}

TEST_CASE("greedy ids of Qwen2 and Qwen3, folder and GGUF, agree with llama.cpp's on at least 5 of 6 prompts") {
  std::map<std::string, int> equal, prompts;
  std::ostringstream table;
  table << "first differing index per prompt against llama.cpp b10470 (- equal):";
  for (const LlamaCppRun& run : llama_cpp_runs()) {
    for (const fs::path& path : {kFixtures / run.file, folder_of(run.file)}) {
      const std::vector<int32_t> ours = llama_cpp_greedy(*cached_model(path), run.prompt_ids);
      const int diff = first_difference(ours, run.greedy_ids);
      std::string prompt = run.prompt;
      for (size_t at; (at = prompt.find('\n')) != std::string::npos;) prompt.replace(at, 1, "\\n");
      table << "\n  " << std::setw(20) << std::left << path.filename().string() << std::setw(50) << prompt
            << (diff < 0 ? std::string("-") : std::to_string(diff));
      equal[path.filename().string()] += diff < 0;
      ++prompts[path.filename().string()];
    }
  }
  MESSAGE(table.str());
  CHECK(prompts.size() == 4);
  for (const auto& [name, n] : prompts) {
    CAPTURE(name);
    CHECK(n == 6);
    CHECK(equal[name] >= 5);
  }
}

TEST_CASE("an independent float64 forward of Llama, Qwen2 and Qwen3 gives the native forward's greedy ids") {
  // The committed draft is the Qwen fixtures' Llama body (README there).
  const fs::path draft = fs::path(SPECD_SOURCE_DIR) / "models/draft";
  for (const fs::path dir : {draft, kFixtures / "qwen2-tiny", kFixtures / "qwen3-tiny"}) {
    const std::string name = dir == draft ? "qwen2-tiny" : dir.filename().string();  // whose prompts
    Float64Forward reference(dir);
    const auto model = cached_model(dir);
    int equal = 0, runs = 0;
    for (const LlamaCppRun& run : llama_cpp_runs()) {
      if (folder_of(run.file).filename() != name) continue;
      CAPTURE(run.prompt);
      const std::vector<int32_t> ours = llama_cpp_greedy(*model, run.prompt_ids);
      const std::vector<int32_t> f64 = reference.greedy(run.prompt_ids, 32, 2);
      equal += ours == f64;
      ++runs;
      const int diff = first_difference(ours, f64);
      if (diff < 0) continue;
      // Where they part, the float64 top-2 gap: a near tie that float32 weights' sums and
      // the BF16 KV cache round the other way, not a different function.
      std::vector<int32_t> context = run.prompt_ids;
      context.insert(context.end(), f64.begin(), f64.begin() + diff);
      std::vector<double> logits = reference.last_logits(context);
      std::partial_sort(logits.begin(), logits.begin() + 2, logits.end(), std::greater<>());
      MESSAGE(dir.string() << " " << run.prompt << ": first difference from float64 at " << diff
                           << ", float64 top-2 gap " << logits[0] - logits[1]);
      CHECK(logits[0] - logits[1] < 0.05);
    }
    CHECK(runs == 6);
    CHECK(equal >= 5);
  }
}

TEST_CASE("the float32 reference model (forward_full) of a Qwen folder matches the native forward's logits") {
  for (const char* name : {"qwen2-tiny", "qwen3-tiny"}) {
    CAPTURE(name);
    const auto reference = load_reference_model(kFixtures / name);
    const auto model = cached_model(kFixtures / name);
    const std::vector<int64_t> ids{1, 1984, 787, 328, 269, 1743, 405, 300, 410, 1488, 1002, 342};
    const int64_t n = static_cast<int64_t>(ids.size());
    const at::Tensor tokens = at::tensor(ids, at::kLong).reshape({1, n});
    const at::Tensor full = reference->forward_full(tokens)[0];
    KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
    const at::Tensor cached = model->forward(ForwardBatch{tokens, {0}, {n}}, cache, LogitsFor::all_positions)[0];
    const double scale = full.abs().max().item<double>();
    CHECK((full - cached).abs().max().item<double>() < 1e-3 * scale);
    // And the additions matter: without them the logits differ.
    ModelConfig plain = reference->config();
    plain.qkv_bias = plain.qk_norm = false;
    auto stripped = std::make_shared<LlamaModel>(plain);
    {
      torch::NoGradGuard no_grad;
      const auto from = reference->named_parameters();
      for (auto& p : stripped->named_parameters()) p.value().copy_(from[p.key()]);
    }
    CHECK((stripped->forward_full(tokens)[0] - full).abs().max().item<double>() > 1e-2 * scale);
  }
}

TEST_CASE("greedy speculation on Qwen targets equals target-only: verify passes of 2 to 9 rows") {
  // The fixtures share the committed draft's vocabulary: each drafts for the other.
  std::vector<std::vector<int32_t>> prompts;
  for (const LlamaCppRun& run : llama_cpp_runs())
    if (run.file == "qwen2-tiny-f16.gguf") prompts.push_back(run.prompt_ids);
  REQUIRE(prompts.size() == 6);
  for (const auto& [target_name, draft_name] :
       {std::pair{"qwen2-tiny", "qwen3-tiny"}, std::pair{"qwen3-tiny-f16.gguf", "qwen2-tiny-f16.gguf"}}) {
    const auto target = cached_model(kFixtures / target_name), draft = cached_model(kFixtures / draft_name);
    for (int32_t k : {1, 4, 8}) {
      CAPTURE(k);
      const std::string pair = std::string(target_name) + " / " + draft_name;
      CAPTURE(pair);
      const SpeculativeGreedy run = speculative_greedy(*target, *draft, prompts, k);
      for (size_t i = 0; i < prompts.size(); ++i) CHECK(run.tokens[i] == llama_cpp_greedy(*target, prompts[i]));
      CHECK(run.accepted > 0);
    }
  }
}
