#pragma once
// The accept/reject step of speculative decoding, as pure functions on one row's
// target and draft outputs (no model calls). Greedy keeps drafts while they equal the
// target's argmax; sampling (Leviathan et al. 2023, Chen et al. 2023) keeps t with
// probability min(1, p(t)/q(t)) and otherwise draws from norm(max(0, p - q)), so every
// emitted token has exactly the target's distribution. Stateless: any thread may call.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/sampling/sampling.hpp"

namespace specd {

// A row's drafts as a token tree (seed 004): node i holds tokens[i] and hangs under
// parents[i] (-1: under the root g, the last token of the context), parents[i] < i. A
// chain of K drafts is the tree whose parents are -1, 0, ..., K - 2. Target rows are
// numbered 0 for the root and i + 1 for node i.
struct DraftTree {
  std::span<const int32_t> tokens;
  std::span<const int32_t> parents;
};

// The accepted path (node indices, root down) and the token after it: the correction
// (a rejection at the path's end) or the bonus (the path ends at a leaf).
struct TreeOutcome {
  std::vector<int32_t> path;
  int32_t next_token = -1;
};

// Greedy tree verification (seed 004, appendix A): from the root, follow the child whose
// token equals the target's argmax at the current node; stop where none does. That is the
// longest accepted path, since at most one child can match. `target_choice(row)` is the
// target's argmax at a row; it is asked only for the rows on the path.
TreeOutcome verify_tree_greedy(const std::function<int32_t(int32_t row)>& target_choice, DraftTree tree);

// Sampled tree verification (SpecInfer's multi-draft rule, seed 004 section 2.1): at each
// node its children are tested in turn; child g is accepted with probability
// min(1, p(g) / q_g(g)), and after a rejection p becomes norm(max(p - q_g, 0)); when no
// child is accepted the next token is drawn from the final p, and at a leaf from p.
// `draft_probs[i]` is the distribution node i was drawn from, or an undefined tensor for a
// deterministic child (q is the point mass on its token). The proof needs each tested
// child to be a draw from its q_g given every child tested before it, so drawn children
// come first in index order (siblings drawn without replacement are in draw order, each
// with q less its elder siblings: Sequoia's rule, lossless by the same argument), then
// the deterministic ones, which may have been chosen knowing the drawn ones.
// `target_probs(row)` is asked only for the rows on the path. One rng.uniform() per test
// and one per draw, so a seed fixes the outcome.
TreeOutcome verify_tree_sampled(const std::function<at::Tensor(int32_t row)>& target_probs,
                                std::span<const at::Tensor> draft_probs, DraftTree tree, Rng& rng);

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
