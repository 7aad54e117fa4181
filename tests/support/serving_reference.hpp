#pragma once
// What the serving tests (actors and gateway) share: their prompts, and the reference
// every stream is compared against, target-only greedy generation of the committed
// default target for one request alone, stopping at its EOS ids.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/generation_drivers.hpp"

namespace specd::testing {

// n chat-style prompts of varied length over eight speaker heads.
inline std::vector<std::string> test_prompts(size_t n) {
  const char* heads[] = {"ROMEO:\n",    "JULIET:\n",     "KING HENRY VI:\n", "First Citizen:\n",
                         "MENENIUS:\n", "GLOUCESTER:\n", "HAMLET:\n",        "LUCIO:\n"};
  const char* bodies[] = {"But soft, what light",       "O God",
                          "We are accounted poor",      "",
                          "What work's, my countrymen", "Now is the winter",
                          "To be, or not to be",        "Good morrow"};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::string(heads[i % 8]) + bodies[(i / 8 + i) % 8]);
  return out;
}

inline std::vector<int32_t> solo_greedy(const std::string& prompt, int32_t max_tokens) {
  static const std::filesystem::path target_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target";
  static auto tokenizer = load_tokenizer(target_dir);
  static auto target = load_model(target_dir);
  static KvCache cache(target->config(), 1, 1024, KvCache::blocks_to_hold(1, 1024));
  GenerationRequest r;
  r.prompt = tokenizer->encode(prompt, true);
  r.max_tokens = max_tokens;
  r.eos_ids = tokenizer->eos_ids();
  return generate_target_only(*target, cache, r).tokens;
}

}  // namespace specd::testing
