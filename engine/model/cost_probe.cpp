#include "engine/model/cost_probe.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"

namespace specd {

double measure_decode_step_seconds(LlamaModel& model, int32_t steps, int64_t context) {
  torch::InferenceMode guard;
  constexpr int32_t kWarmup = 8;
  constexpr int32_t kRuns = 7;
  const int64_t max_seq = context + steps + kWarmup + 1;
  KvCache cache(model.config(), 1, max_seq, KvCache::blocks_to_hold(1, max_seq));
  const int32_t slot = 0;  // the cache's one slot
  const int64_t vocab = model.config().vocab_size;
  at::Tensor prompt = at::arange(context, at::kLong).remainder(vocab).unsqueeze(0);
  at::Tensor logits = model.forward({prompt, {slot}, {context}}, cache, LogitsFor::last_position);
  auto step = [&] {
    at::Tensor next = logits.argmax(-1).view({1, 1});
    logits = model.forward({next, {slot}, {1}}, cache, LogitsFor::last_position);
  };
  for (int32_t i = 0; i < kWarmup; ++i) step();
  // The median of several timed runs: single runs of a sub-millisecond model swing by
  // half when a thread wakes late.
  std::vector<double> runs;
  for (int32_t r = 0; r < kRuns; ++r) {
    cache.truncate_to(slot, context + kWarmup);
    const auto t0 = std::chrono::steady_clock::now();
    for (int32_t i = 0; i < steps; ++i) step();
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  std::nth_element(runs.begin(), runs.begin() + kRuns / 2, runs.end());
  return runs[kRuns / 2];
}

}  // namespace specd
