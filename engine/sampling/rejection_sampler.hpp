#pragma once
// The accept/reject step of speculative decoding, as pure functions on one row's
// target and draft outputs (no model calls). Greedy keeps drafts while they equal the
// target's argmax; sampling (Leviathan et al. 2023, Chen et al. 2023) keeps t with
// probability min(1, p(t)/q(t)) and otherwise draws from norm(max(0, p - q)), so every
// emitted token has exactly the target's distribution. Stateless: any thread may call.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>

#include "engine/sampling/sampling.hpp"

namespace specd {

// Outcome of verifying one row's K drafted tokens.
struct VerifyOutcome {
  int32_t accepted = 0;     // n: leading draft tokens kept, 0..K
  int32_t next_token = -1;  // correction (n < K) or bonus (n == K) token
};

// Greedy: accept while target_choices[i] == draft_tokens[i]; next = target_choices[n].
// target_choices has K+1 entries (the target's argmax after g, t1, ..., tK).
VerifyOutcome verify_greedy(std::span<const int32_t> target_choices, std::span<const int32_t> draft_tokens);

// Sampling: target_probs holds K+1 distributions [vocab] (float32, each sums to 1, processed
// exactly as the draft's were), draft_probs the K distributions each draft token was drawn
// from. Uses one rng.uniform() per accept test and one per draw, so a seed fixes the outcome.
// A draft token with q(t) == 0 (impossible if it was drawn from q) is rejected.
VerifyOutcome verify_sampled(std::span<const at::Tensor> target_probs, std::span<const at::Tensor> draft_probs,
                             std::span<const int32_t> draft_tokens, Rng& rng);

// The residual distribution norm(max(0, p - q)); p itself when the residual has no mass
// (p equals q up to float rounding), where a draw from the rounding noise would be arbitrary.
at::Tensor residual_distribution(const at::Tensor& p, const at::Tensor& q);

}  // namespace specd
