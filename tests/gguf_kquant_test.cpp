// K-quant GGUF files written by llama.cpp's llama-quantize (../shared/data/gguf/kquants,
// README there): the committed target padded to 768 / 2048 and stored as Q4_K_M, Q5_K_M,
// Q6_K and plain Q4_0 (with its Q6_K embedding) load and run as stored, and their greedy
// ids agree with llama.cpp's on at least 4 of the 6 prompts of each file. Where they
// differ, the table printed gives the first differing position and specd's top-2 logit
// margin there (a small margin: the two programs' roundings differ, not their math).
#include "tests/support/doctest_torch.hpp"

#include <simdjson.h>

#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/llama_cpp_greedy.hpp"

namespace fs = std::filesystem;
using namespace specd;
using namespace specd::testing;

namespace {

const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "../shared/data/gguf/kquants";
const fs::path kModels = fs::path(SPECD_SOURCE_DIR) / "models";

struct LlamaCppRun {
  std::string file;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

std::vector<LlamaCppRun> llama_cpp_runs() {
  simdjson::dom::parser parser;
  std::vector<LlamaCppRun> out;
  for (simdjson::dom::element e : parser.load((kFixtures / "llama_cpp_greedy_kquants.json").string()).get_array()) {
    out.push_back({std::string(e["file"].get_string().value()), ids_of(e["prompt_ids"]), ids_of(e["greedy_ids"])});
  }
  return out;
}

// specd's top-1 minus top-2 logit after the prompt and the first `at` generated ids.
double top2_margin(LlamaModel& model, std::vector<int32_t> ids) {
  KvCache cache(model.config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> wide(ids.begin(), ids.end());
  ForwardBatch batch{at::tensor(wide, at::kLong).reshape({1, n}), {0}, {n}};
  const at::Tensor logits = model.forward(batch, cache, LogitsFor::last_position).reshape({-1});
  const at::Tensor top = std::get<0>(logits.topk(2));
  return (top[0] - top[1]).item<double>();
}

const std::map<std::string, kernels::Dtype> kEmbedding = {{"target768-q4_k_m.gguf", kernels::Dtype::q6_k},
                                                          {"target768-q5_k_m.gguf", kernels::Dtype::q6_k},
                                                          {"target768-q6_k.gguf", kernels::Dtype::q6_k},
                                                          {"target768-q4_0.gguf", kernels::Dtype::q6_k}};

}  // namespace

TEST_CASE("llama-quantize's K-quant presets and its Q4_0 load as stored, the tied embedding Q6_K") {
  for (const auto& [file, embed] : kEmbedding) {
    INFO(file);
    const auto model = cached_model(kFixtures / file);
    const InferenceWeights& w = *model->inference_weights();
    CHECK(w.embed.dtype() == embed);
    CHECK(w.config.hidden_size == 768);
    CHECK(w.config.intermediate_size == 2048);
    int64_t k_quant = 0;
    for (const LayerWeights& l : w.layers) {
      for (const kernels::PackedWeight* m : {&l.qkv, &l.o, &l.gate_up, &l.down}) {
        const kernels::Dtype d = m->dtype();
        k_quant += d == kernels::Dtype::q4_k || d == kernels::Dtype::q5_k || d == kernels::Dtype::q6_k;
      }
    }
    if (file == "target768-q4_0.gguf") {
      CHECK(k_quant == 0);
      CHECK(w.layers[0].qkv.dtype() == kernels::Dtype::q4_0);
    } else {
      CHECK(k_quant == 4 * static_cast<int64_t>(w.layers.size()));
    }
  }
  // Q4_K_M: q and k Q4_K, v Q6_K in some layers (llama-quantize's use_more_bits): a stacked qkv.
  const auto q4km = cached_model(kFixtures / "target768-q4_k_m.gguf");
  int64_t stacked = 0;
  for (const LayerWeights& l : q4km->inference_weights()->layers) stacked += l.qkv.stacked();
  MESSAGE("Q4_K_M layers whose qkv mixes Q4_K and Q6_K: " << stacked);
  CHECK(stacked > 0);
}

TEST_CASE("greedy ids on llama-quantize's K-quant files agree with llama.cpp's on at least 4 of 6 prompts") {
  std::map<std::string, int> equal, prompts;
  std::ostringstream table;
  table << "first differing index per prompt (- equal; margin: specd's top-2 logit gap there) against llama.cpp "
           "b10470:";
  std::ostringstream f16_table;  // the same ids against llama.cpp's F16 file's
  f16_table << "first differing index against llama.cpp's ids on target768-f16.gguf:";
  std::string current;
  const std::vector<LlamaCppRun> runs = llama_cpp_runs();
  for (size_t i = 0; i < runs.size(); ++i) {
    const LlamaCppRun& run = runs[i];
    if (run.file == "target768-f16.gguf") continue;  // not kept: 79 MB (README)
    const auto model = cached_model(kFixtures / run.file);
    const std::vector<int32_t> ours = llama_cpp_greedy(*model, run.prompt_ids);
    for (int32_t id : ours) REQUIRE(id < model->config().vocab_size);
    const int diff = first_difference(ours, run.greedy_ids);
    if (run.file != current) {
      table << "\n  " << std::setw(22) << std::left << run.file << ":";
      f16_table << "\n  " << std::setw(22) << std::left << run.file << ":";
      current = run.file;
    }
    const int f16_diff = first_difference(ours, runs[i % 6].greedy_ids);  // the F16 file's runs come first
    REQUIRE(runs[i % 6].file == "target768-f16.gguf");
    REQUIRE(runs[i % 6].prompt_ids == run.prompt_ids);
    f16_table << " " << (f16_diff < 0 ? std::string("-") : std::to_string(f16_diff));
    if (diff < 0) {
      table << " -";
    } else {
      std::vector<int32_t> context = run.prompt_ids;
      context.insert(context.end(), ours.begin(), ours.begin() + diff);
      table << " " << diff << " (" << std::fixed << std::setprecision(3) << top2_margin(*model, context) << ")";
    }
    equal[run.file] += diff < 0;
    ++prompts[run.file];
  }
  MESSAGE(table.str());
  MESSAGE(f16_table.str());
  for (const auto& [file, embed] : kEmbedding) {
    INFO(file);
    CHECK(prompts[file] == 6);
    CHECK(equal[file] >= 4);
  }
}

TEST_CASE("greedy speculation with the committed draft on K-quant targets equals target-only, K 1, 4 and 8") {
  // Verify passes of 2 to 9 rows through the nibble kernels must give a row's one-step bits.
  const auto draft = cached_model(kModels / "draft");
  std::vector<std::vector<int32_t>> prompts;
  for (const LlamaCppRun& run : llama_cpp_runs())
    if (run.file == "target768-f16.gguf") prompts.push_back(run.prompt_ids);
  REQUIRE(prompts.size() == 6);
  for (const char* file : {"target768-q4_k_m.gguf", "target768-q5_k_m.gguf", "target768-q6_k.gguf"}) {
    const auto target = cached_model(kFixtures / file);
    REQUIRE(target->config().vocab_size == draft->config().vocab_size);
    for (int32_t k : {1, 4, 8}) {
      CAPTURE(file);
      CAPTURE(k);
      const SpeculativeGreedy run = speculative_greedy(*target, *draft, prompts, k);
      for (size_t i = 0; i < prompts.size(); ++i) CHECK(run.tokens[i] == llama_cpp_greedy(*target, prompts[i]));
      CHECK(run.accepted > 0);
    }
  }
}
