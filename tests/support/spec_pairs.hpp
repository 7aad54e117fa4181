#pragma once
// Draft/target pairs for speculative tests: a random target with a random smaller
// draft (disagrees often), or a perturbed copy (agrees often enough that rejections
// land at every draft position).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <memory>

#include "engine/model/kv_cache.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/tiny_models.hpp"

namespace specd::testing {

struct TestPair {
  std::shared_ptr<LlamaModel> target, draft;
  std::unique_ptr<KvCache> target_cache, draft_cache;
  SpecModels models() { return {*target, *target_cache, draft.get(), draft_cache.get()}; }
};

inline ModelConfig small_draft_config() {
  ModelConfig c = tiny_config();
  c.hidden_size = 24;
  c.intermediate_size = 48;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 12;
  return c;
}

// A copy of `model` with Gaussian noise of the given std added to every weight.
inline std::shared_ptr<LlamaModel> perturbed_copy(const LlamaModel& model, double noise, uint64_t seed) {
  auto copy = std::make_shared<LlamaModel>(model.config());
  at::manual_seed(seed);
  torch::NoGradGuard no_grad;
  auto src = model.named_parameters();
  for (auto& p : copy->named_parameters()) p.value().copy_(src[p.key()] + noise * at::randn_like(src[p.key()]));
  copy->eval();
  return copy;
}

inline TestPair make_pair(bool perturbed, int32_t slots, int64_t max_seq = 128) {
  TestPair p;
  p.target = random_model(tiny_config(), 101);
  p.draft = perturbed ? perturbed_copy(*p.target, 0.015, 7) : random_model(small_draft_config(), 202);
  p.target_cache =
      std::make_unique<KvCache>(p.target->config(), slots, max_seq, KvCache::blocks_to_hold(slots, max_seq));
  p.draft_cache = std::make_unique<KvCache>(p.draft->config(), slots, max_seq, KvCache::blocks_to_hold(slots, max_seq));
  return p;
}

// 24 prompts of mixed lengths 1..47 over the tiny vocabulary.
inline std::vector<std::vector<int32_t>> mixed_prompts() {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 24; ++i) {
    std::vector<int32_t> p = {1};
    const int len = 1 + (i * 13) % 47;
    for (int j = 1; j < len; ++j) p.push_back((i * 31 + j * 7 + j * j) % 97);
    prompts.push_back(p);
  }
  return prompts;
}

// Target-only greedy ids on a cache of its own: the reference speculation must equal.
inline std::vector<int32_t> target_only(LlamaModel& target, const std::vector<int32_t>& prompt, int32_t max_tokens,
                                        const SamplingParams& sampling = {}) {
  KvCache cache(target.config(), 1, 128, KvCache::blocks_to_hold(1, 128));
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling = sampling;
  return generate_target_only(target, cache, r).tokens;
}

}  // namespace specd::testing
