#pragma once
// What the tests that compare specd's greedy ids with llama.cpp's share (gguf_model_test,
// gguf_kquant_test, qwen_model_test): the fixtures' id arrays, one loaded model per path,
// greedy ids as llama.cpp's server reported them, the same prompts speculatively, and
// where two runs differ.
#include <simdjson.h>

#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "tests/support/generation_drivers.hpp"

namespace specd::testing {

inline std::vector<int32_t> ids_of(simdjson::dom::element e) {
  std::vector<int32_t> out;
  for (int64_t id : e.get_array()) out.push_back(static_cast<int32_t>(id));
  return out;
}

inline std::shared_ptr<LlamaModel> cached_model(const std::filesystem::path& path) {
  static std::map<std::filesystem::path, std::shared_ptr<LlamaModel>> models;
  auto& m = models[path];
  if (!m) m = load_model(path);
  return m;
}

// Greedy ids as llama.cpp's server reported them: up to 32, ending with the EOS when one
// ended generation (the fixtures' README says the EOS is left out; their ids keep it).
inline std::vector<int32_t> llama_cpp_greedy(LlamaModel& model, const std::vector<int32_t>& prompt) {
  KvCache cache(model.config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 32;
  r.eos_ids = {2};
  return generate_target_only(model, cache, r).tokens;
}

// Speculative greedy runs of `prompts` in one batch at K = k, the way llama_cpp_greedy
// runs them: each run's ids, and the draft tokens accepted over the batch.
struct SpeculativeGreedy {
  std::vector<std::vector<int32_t>> tokens;
  int64_t accepted = 0;
};
inline SpeculativeGreedy speculative_greedy(LlamaModel& target, LlamaModel& draft,
                                            const std::vector<std::vector<int32_t>>& prompts, int32_t k) {
  const auto slots = static_cast<int32_t>(prompts.size());
  KvCache tc(target.config(), slots, 256, KvCache::blocks_to_hold(slots, 256)),
      dc(draft.config(), slots, 256, KvCache::blocks_to_hold(slots, 256));
  SpecModels models{target, tc, &draft, &dc};
  std::vector<DriverRequest> requests;
  for (const auto& prompt : prompts) {
    DriverRequest r;
    r.prompt = prompt;
    r.max_tokens = 32;
    r.eos_ids = {2};
    r.spec.k = k;
    requests.push_back(r);
  }
  SpeculativeGreedy out;
  for (const SpecResult& result : generate_speculative(models, requests, nullptr)) {
    out.tokens.push_back(result.tokens);
    out.accepted += result.stats.accepted;
  }
  return out;
}

// Where two greedy runs first differ: -1 when equal.
inline int first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<int>(i);
  return a.size() == b.size() ? -1 : static_cast<int>(n);
}

}  // namespace specd::testing
