#pragma once
// The reference every serving test compares against: target-only greedy generation of
// the committed default target, one request alone, stopping at its EOS ids.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/checkpoint.hpp"
#include "engine/generation.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_model.hpp"
#include "engine/tokenizer.hpp"

namespace specd::testing {

inline std::vector<int32_t> solo_greedy(const std::string& prompt, int32_t max_tokens) {
  static const std::filesystem::path target_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target";
  static auto tokenizer = load_tokenizer(target_dir);
  static auto target = load_model(target_dir);
  static KvCache cache(target->config(), 1, 1024);
  GenerationRequest r;
  r.prompt = tokenizer->encode(prompt, true);
  r.max_tokens = max_tokens;
  r.eos_ids = tokenizer->eos_ids();
  return generate_target_only(*target, cache, r).tokens;
}

}  // namespace specd::testing
