#include "engine/sampling/sampling.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

at::Tensor penalized_logits(const at::Tensor& logits, const SamplingParams& params, TokenHistory history) {
  at::Tensor out = logits.to(at::kFloat).contiguous().clone();
  if (!params.changes_logits()) return out;
  float* data = out.data_ptr<float>();
  const int64_t vocab = out.numel();
  for (const auto& [id, bias] : params.logit_bias) {
    if (id >= 0 && id < vocab) data[id] += bias;
  }
  if (!params.reads_history() || history.tokens.empty()) return out;
  std::vector<int32_t> generated(static_cast<size_t>(vocab), 0);  // count per token after the prompt
  std::vector<bool> seen(static_cast<size_t>(vocab), false);
  const auto repetition = static_cast<float>(params.repetition_penalty);
  for (size_t i = 0; i < history.tokens.size(); ++i) {
    const int32_t id = history.tokens[i];
    if (id < 0 || id >= vocab) continue;
    if (static_cast<int64_t>(i) >= history.prompt_tokens) ++generated[static_cast<size_t>(id)];
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    if (repetition != 1.0f) data[id] = data[id] > 0 ? data[id] / repetition : data[id] * repetition;
  }
  if (params.presence_penalty != 0.0 || params.frequency_penalty != 0.0) {
    const auto presence = static_cast<float>(params.presence_penalty);
    const auto frequency = static_cast<float>(params.frequency_penalty);
    for (int64_t id = 0; id < vocab; ++id) {
      const int32_t count = generated[static_cast<size_t>(id)];
      if (count > 0) data[id] -= static_cast<float>(count) * frequency + presence;
    }
  }
  return out;
}

at::Tensor sampling_distribution(const at::Tensor& logits, const SamplingParams& params, TokenHistory history) {
  at::Tensor scaled = penalized_logits(logits, params, history) / params.temperature;
  const int64_t vocab = scaled.numel();
  if (params.top_k > 0 && params.top_k < vocab) {
    at::Tensor kth = std::get<0>(at::topk(scaled, params.top_k)).min();
    scaled = scaled.masked_fill(scaled < kth, -INFINITY);
  }
  at::Tensor probs = at::softmax(scaled, -1);
  if (params.top_p < 1.0) {
    auto [sorted, order] = at::sort(probs, -1, /*descending=*/true);
    // Keep the smallest prefix whose mass reaches top_p: a token stays if the mass
    // before it is still below top_p (so the most likely token always stays).
    at::Tensor mass_before = at::cumsum(sorted, -1) - sorted;
    at::Tensor drop_sorted = mass_before >= params.top_p;
    at::Tensor drop = at::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    probs = probs.masked_fill(drop, 0.0);
    probs = probs / probs.sum();
  }
  if (params.min_p > 0.0) {  // relative to the most likely token, which always stays
    probs = probs.masked_fill(probs < probs.max() * params.min_p, 0.0);
    probs = probs / probs.sum();
  }
  return probs;
}

int32_t draw_from(const at::Tensor& probs, Rng& rng) {
  at::Tensor p = probs.to(at::kFloat).contiguous();
  const float* data = p.data_ptr<float>();
  const int64_t n = p.numel();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += data[i];
  const double target = rng.uniform() * total;
  double acc = 0;
  int64_t last_positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (data[i] <= 0) continue;
    acc += data[i];
    last_positive = i;
    if (target < acc) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_positive);  // rounding left target at the very end
}

std::vector<Draw> draw_distinct(const at::Tensor& q, int32_t count, Rng& rng) {
  // Mass at or below this is float rounding of a distribution that is spent.
  constexpr double kMinMass = 1e-6;
  std::vector<Draw> draws;
  at::Tensor left = q;
  for (int32_t i = 0; i < count; ++i) {
    if (i > 0) {
      left = left.clone();
      left[draws.back().token] = 0.0f;
      const double mass = left.sum().item<double>();
      if (!(mass > kMinMass)) break;
      left.div_(mass);
    }
    draws.push_back({draw_from(left, rng), left});
  }
  return draws;
}

TokenLogprobs token_logprobs(const at::Tensor& logits, int32_t token, int32_t top) {
  const at::Tensor logp = at::log_softmax(logits.to(at::kFloat), -1).contiguous();
  const float* data = logp.data_ptr<float>();
  TokenLogprobs out;
  out.chosen = {token, data[token], {}};
  if (top > 0) {
    const auto [values, ids] = logp.topk(std::min<int64_t>(top, logp.numel()));
    for (int64_t i = 0; i < values.numel(); ++i)
      out.top.push_back({static_cast<int32_t>(ids[i].item<int64_t>()), values[i].item<float>(), {}});
  }
  return out;
}

int32_t sample_token(const at::Tensor& logits, const SamplingParams& params, TokenHistory history, Rng& rng) {
  if (params.greedy()) return static_cast<int32_t>(penalized_logits(logits, params, history).argmax().item<int64_t>());
  return draw_from(sampling_distribution(logits, params, history), rng);
}

}  // namespace specd
