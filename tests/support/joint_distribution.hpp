#pragma once
// Distribution tests for sampled speculation: the exact target-only probability of
// every 3-token continuation, and a chi-square fit of speculative samples against it.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "engine/grammar/grammar_matcher.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/sampling.hpp"
#include "tests/support/chi_square.hpp"
#include "tests/support/generation_drivers.hpp"

namespace specd::testing {

using Continuation = std::vector<int32_t>;

// P(t1, t2, t3 | prompt) under target-only sampling with `sp`, for every triple with
// non-zero probability (keep the support small with top_k). Under a `grammar`, each
// position's logits are masked by hand first (a fresh matcher fed the tokens so far;
// disallowed ids to -inf), as the engine masks before it samples.
inline std::map<Continuation, double> exact_joint3(
    LlamaModel& target, const std::vector<int32_t>& prompt, const SamplingParams& sp,
    const std::shared_ptr<const grammar::CompiledGrammar>& grammar = {}) {
  c10::InferenceMode guard;
  // The inference forward the speculative runs use, on a fresh cache slot per context.
  const int64_t max_seq = static_cast<int64_t>(prompt.size()) + 4;
  KvCache cache(target.config(), 1, max_seq, KvCache::blocks_to_hold(1, max_seq));
  const int32_t slot = 0;  // the cache's one slot
  auto dist = [&](const std::vector<int32_t>& ctx) {
    std::vector<int64_t> ids(ctx.begin(), ctx.end());
    const int64_t n = static_cast<int64_t>(ids.size());
    cache.set_length(slot, 0);
    at::Tensor logits = target.forward({at::tensor(ids).unsqueeze(0), {slot}, {n}}, cache, LogitsFor::last_position)[0];
    if (grammar) {
      grammar::GrammarMatcher m(grammar);
      for (size_t i = prompt.size(); i < ctx.size(); ++i) REQUIRE(m.accept_token(ctx[i]));
      std::optional<at::Tensor> masked = masked_by_hand(logits, m);
      REQUIRE(masked);
      logits = std::move(*masked);
    }
    return sampling_distribution(logits, sp, {ctx, static_cast<int64_t>(prompt.size())});
  };
  auto support = [](const at::Tensor& p) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < p.numel(); ++i) {
      if (p[i].item<float>() > 0) ids.push_back(static_cast<int32_t>(i));
    }
    return ids;
  };
  std::map<Continuation, double> exact;
  at::Tensor p1 = dist(prompt);
  for (int32_t a : support(p1)) {
    auto c1 = prompt;
    c1.push_back(a);
    at::Tensor p2 = dist(c1);
    for (int32_t b : support(p2)) {
      auto c2 = c1;
      c2.push_back(b);
      at::Tensor p3 = dist(c2);
      for (int32_t c : support(p3))
        exact[{a, b, c}] = p1[a].item<double>() * p2[b].item<double>() * p3[c].item<double>();
    }
  }
  return exact;
}

struct JointSample {
  std::map<Continuation, int64_t> counts;
  SpecStats stats;
};

inline SpecSettings chain_of(int32_t k) {
  SpecSettings spec;
  spec.k = k;
  return spec;
}

// n speculative samples of 3 tokens with `spec` (by default K = 2: t2 and t3 come from
// one speculative round), 8 requests per batch, seeds seed0, seed0 + 1, ... Generating
// `max_tokens` > 3 lets a round after the first token draft deeper than 1; only the
// first 3 tokens are counted.
inline JointSample sample_joint3(SpecModels models, const std::vector<int32_t>& prompt, const SamplingParams& sp,
                                 int64_t n, uint64_t seed0, const SpecSettings& spec = chain_of(2),
                                 int32_t max_tokens = 3, std::optional<int32_t> auto_tree_extra = std::nullopt) {
  JointSample out;
  for (int64_t first = 0; first < n; first += 8) {
    std::vector<DriverRequest> reqs;
    for (int64_t i = first; i < std::min(n, first + 8); ++i) {
      DriverRequest r;
      r.prompt = prompt;
      r.max_tokens = max_tokens;
      r.spec = spec;
      r.auto_tree_extra = auto_tree_extra;
      r.sampling = sp;
      r.sampling.seed = seed0 + static_cast<uint64_t>(i);
      reqs.push_back(r);
    }
    for (auto& res : generate_speculative(models, reqs, nullptr)) {
      out.counts[Continuation(res.tokens.begin(), res.tokens.begin() + std::min<size_t>(3, res.tokens.size()))] += 1;
      out.stats.drafted += res.stats.drafted;
      out.stats.accepted += res.stats.accepted;
    }
  }
  return out;
}

// Chi-square of the sampled counts against the exact probabilities; `outside` gets the
// number of samples outside the target's support (must be 0).
inline ChiSquare fit_joint3(const std::map<Continuation, double>& exact, const JointSample& sample, int64_t n,
                            int64_t& outside) {
  std::vector<double> observed, expected;
  int64_t inside = 0;
  for (const auto& [seq, prob] : exact) {
    const auto it = sample.counts.find(seq);
    const int64_t count = it == sample.counts.end() ? 0 : it->second;
    expected.push_back(prob * static_cast<double>(n));
    observed.push_back(static_cast<double>(count));
    inside += count;
  }
  outside = n - inside;
  return chi_square(observed, expected);
}

}  // namespace specd::testing
