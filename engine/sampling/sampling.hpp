#pragma once
// Turning logits into a token: logit bias and penalties, temperature, top-k, top-p and
// min-p, then a draw from a per-request seeded generator. The same processing serves target-only
// decoding and (for both p and q) speculative rejection sampling.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>
#include <vector>

#include "engine/base/rng.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/request/token_logprobs.hpp"

namespace specd {

// The tokens a position's logits follow: the prompt, then what was generated. The
// repetition penalty reads them all, the presence and frequency penalties only the
// generated ones (OpenAI's definition). Empty when the params read no history.
struct TokenHistory {
  std::span<const int32_t> tokens;
  int64_t prompt_tokens = 0;  // tokens[0, prompt_tokens) are the prompt
};

// Logits [vocab] (float32) after the logit bias and the penalties.
at::Tensor penalized_logits(const at::Tensor& logits, const SamplingParams& params, TokenHistory history);

// The distribution [vocab] (float32, sums to 1) that sampling draws from: bias and
// penalties, temperature, top-k, top-p, min-p. Requires temperature > 0.
at::Tensor sampling_distribution(const at::Tensor& logits, const SamplingParams& params, TokenHistory history);

// Draws an index from a probability vector by inverse CDF with one uniform draw.
int32_t draw_from(const at::Tensor& probs, Rng& rng);

// A token and the distribution it was drawn from.
struct Draw {
  int32_t token = -1;
  at::Tensor q;
};

// Up to `count` distinct tokens drawn without replacement: each from q with the tokens
// drawn before it removed and the rest renormalised, returned with that distribution
// (what a sibling in a sampled token tree is tested against). Stops early once what is
// left of q has no mass, so a peaked q yields fewer tokens. One rng.uniform() per token.
std::vector<Draw> draw_distinct(const at::Tensor& q, int32_t count, Rng& rng);

// `token`'s log-probability under the model's own distribution at this row of logits,
// and the `top` most likely tokens' (ids and values; texts are the tokenizer's to add).
TokenLogprobs token_logprobs(const at::Tensor& logits, int32_t token, int32_t top);

// Greedy argmax of the penalized logits, or a draw from sampling_distribution.
int32_t sample_token(const at::Tensor& logits, const SamplingParams& params, TokenHistory history, Rng& rng);

}  // namespace specd
