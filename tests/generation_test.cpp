// Target-only generation and the sampling pipeline: determinism, seeds, limits, and
// each sampling transform checked against its definition.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>

#include <cmath>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/sampling.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::random_model;
using specd::testing::tiny_config;

namespace {

GenerationRequest request_for(std::vector<int32_t> prompt, double temperature, uint64_t seed, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.max_tokens = max_tokens;
  return r;
}

}  // namespace

TEST_CASE("greedy generation is deterministic and matches argmax of the full forward") {
  auto model = random_model(tiny_config(), 31);
  KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
  auto req = request_for({1, 5, 9, 14}, 0.0, 0, 12);
  auto a = generate_target_only(*model, cache, req);
  auto b = generate_target_only(*model, cache, req);
  REQUIRE(a.tokens.size() == 12);
  CHECK(a.tokens == b.tokens);
  CHECK(a.finish_reason == FinishReason::length);
  // Recompute each token with a fresh full forward over the growing sequence.
  std::vector<int64_t> seq(req.prompt.begin(), req.prompt.end());
  for (int32_t token : a.tokens) {
    at::Tensor logits = model->forward_full(at::tensor(seq, at::kLong).unsqueeze(0))[0][-1];
    CHECK(logits.argmax().item<int64_t>() == token);
    seq.push_back(token);
  }
}

TEST_CASE("sampling with the same seed repeats, and another seed differs") {
  auto model = random_model(tiny_config(), 32);
  KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
  auto a = generate_target_only(*model, cache, request_for({1, 7}, 1.0, 42, 30));
  auto b = generate_target_only(*model, cache, request_for({1, 7}, 1.0, 42, 30));
  auto c = generate_target_only(*model, cache, request_for({1, 7}, 1.0, 43, 30));
  CHECK(a.tokens == b.tokens);
  CHECK(a.tokens != c.tokens);
}

TEST_CASE("generation stops on an EOS id, keeps it, and never exceeds max_tokens or the cache") {
  auto model = random_model(tiny_config(), 33);
  KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
  auto free_run = generate_target_only(*model, cache, request_for({1, 3}, 0.0, 0, 10));
  REQUIRE(free_run.tokens.size() == 10);
  auto req = request_for({1, 3}, 0.0, 0, 10);
  req.eos_ids = {free_run.tokens[4]};
  auto stopped = generate_target_only(*model, cache, req);
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[4]);
  const auto expected_len = static_cast<size_t>(first - free_run.tokens.begin()) + 1;
  CHECK(stopped.tokens.size() == expected_len);
  CHECK(stopped.finish_reason == FinishReason::stop);

  KvCache small(model->config(), 1, 8, KvCache::blocks_to_hold(1, 8));
  auto capped = generate_target_only(*model, small, request_for({1, 3, 4}, 0.0, 0, 100));
  CHECK(capped.tokens.size() == 6);  // 3 prompt + 5 fed generated tokens fill 8 positions, +1 sampled
  CHECK(capped.finish_reason == FinishReason::length);
  CHECK_THROWS_AS(generate_target_only(*model, small, request_for(std::vector<int32_t>(8, 4), 0.0, 0, 1)), SpecdError);
}

TEST_CASE("sampling parameters are validated") {
  SamplingParams p;
  CHECK_NOTHROW(validate(p));
  using Breaker = void (*)(SamplingParams&);
  for (Breaker bad : std::vector<Breaker>{
           [](SamplingParams& s) { s.temperature = -1; }, [](SamplingParams& s) { s.temperature = NAN; },
           [](SamplingParams& s) { s.top_p = 0; }, [](SamplingParams& s) { s.top_p = 1.5; },
           [](SamplingParams& s) { s.top_k = -2; }, [](SamplingParams& s) { s.repetition_penalty = 0; },
           [](SamplingParams& s) { s.min_p = 1.5; }, [](SamplingParams& s) { s.presence_penalty = 2.5; },
           [](SamplingParams& s) { s.frequency_penalty = -3; },
           [](SamplingParams& s) {
             s.logit_bias = {{1, 101.0f}};
           },
           [](SamplingParams& s) {
             s.logit_bias = {{-1, 1.0f}};
           }}) {
    SamplingParams s;
    bad(s);
    CHECK_THROWS_AS(validate(s), SpecdError);
  }
}

TEST_CASE("top-k, top-p, temperature and repetition penalty follow their definitions") {
  at::Tensor logits = at::log(at::tensor({0.5, 0.2, 0.15, 0.1, 0.05}, at::kFloat));
  SamplingParams p;
  p.temperature = 1.0;
  CHECK(at::allclose(sampling_distribution(logits, p, {}), at::tensor({0.5, 0.2, 0.15, 0.1, 0.05}, at::kFloat)));
  p.top_k = 2;
  CHECK(at::allclose(sampling_distribution(logits, p, {}),
                     at::tensor({0.5 / 0.7, 0.2 / 0.7, 0.0, 0.0, 0.0}, at::kFloat)));
  p.top_k = 0;
  p.top_p = 0.8;  // 0.5 + 0.2 = 0.7 < 0.8, so 0.15 is needed too
  CHECK(at::allclose(sampling_distribution(logits, p, {}),
                     at::tensor({0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0.0, 0.0}, at::kFloat)));
  p.top_p = 0.3;  // the most likely token always stays
  CHECK(at::allclose(sampling_distribution(logits, p, {}), at::tensor({1.0, 0.0, 0.0, 0.0, 0.0}, at::kFloat)));
  p.top_p = 1.0;
  p.temperature = 0.5;  // p^(1/T) renormalised
  at::Tensor sq = at::tensor({0.25, 0.04, 0.0225, 0.01, 0.0025}, at::kFloat);
  CHECK(at::allclose(sampling_distribution(logits, p, {}), sq / sq.sum()));
  // Repetition penalty: positive logits divided, negative multiplied.
  SamplingParams r;
  r.repetition_penalty = 2.0;
  at::Tensor mixed = at::tensor({2.0, -1.0, 0.5}, at::kFloat);
  std::vector<int32_t> ctx = {0, 1, 1};
  CHECK(at::equal(penalized_logits(mixed, r, {ctx}), at::tensor({1.0, -2.0, 0.5}, at::kFloat)));
  CHECK(sample_token(mixed, r, {ctx}, *std::make_unique<Rng>(1)) == 0);
  std::vector<int32_t> ctx2 = {0};
  CHECK(sample_token(at::tensor({1.5, 1.0, 0.5}, at::kFloat), r, {ctx2}, *std::make_unique<Rng>(1)) == 1);
}

TEST_CASE("min-p, logit bias, presence and frequency penalties follow OpenAI's and vLLM's definitions") {
  at::Tensor logits = at::log(at::tensor({0.5, 0.2, 0.15, 0.1, 0.05}, at::kFloat));
  SamplingParams p;
  p.temperature = 1.0;
  p.min_p = 0.3;  // keeps tokens with at least 0.3 x 0.5 = 0.15
  CHECK(at::allclose(sampling_distribution(logits, p, {}),
                     at::tensor({0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0.0, 0.0}, at::kFloat)));
  p.min_p = 1.0;  // only the most likely
  CHECK(at::allclose(sampling_distribution(logits, p, {}), at::tensor({1.0, 0.0, 0.0, 0.0, 0.0}, at::kFloat)));

  const at::Tensor flat = at::tensor({1.0, 1.0, 1.0, 1.0}, at::kFloat);
  SamplingParams bias;
  bias.logit_bias = {{2, 5.0f}, {0, -100.0f}};
  CHECK(at::equal(penalized_logits(flat, bias, {}), at::tensor({-99.0, 1.0, 6.0, 1.0}, at::kFloat)));
  CHECK(sample_token(flat, bias, {}, *std::make_unique<Rng>(1)) == 2);

  // Counts over generated tokens only: the prompt (the first two) is not penalized.
  SamplingParams pen;
  pen.presence_penalty = 0.5;
  pen.frequency_penalty = 0.25;
  const std::vector<int32_t> history = {3, 3, 1, 1, 1, 2};
  CHECK(at::allclose(penalized_logits(flat, pen, {history, 2}),
                     at::tensor({1.0, 1.0 - 0.5 - 3 * 0.25, 1.0 - 0.5 - 0.25, 1.0}, at::kFloat)));
  // Negative values encourage repeats.
  pen.presence_penalty = -1.0;
  pen.frequency_penalty = 0;
  CHECK(sample_token(flat, pen, {history, 5}, *std::make_unique<Rng>(1)) == 2);
}

TEST_CASE("draw_from matches the distribution (chi-square, N = 200000, threshold p < 0.001)") {
  at::Tensor probs = at::tensor({0.4, 0.0, 0.3, 0.2, 0.1}, at::kFloat);
  Rng rng(2024);
  std::vector<int64_t> counts(5, 0);
  const int64_t n = 200000;
  for (int64_t i = 0; i < n; ++i) ++counts[draw_from(probs, rng)];
  CHECK(counts[1] == 0);
  double chi2 = 0;
  for (int i : {0, 2, 3, 4}) {
    const double expected = probs[i].item<double>() * n;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  CHECK(chi2 < 16.27);  // chi-square critical value, 3 degrees of freedom, alpha 0.001
}
