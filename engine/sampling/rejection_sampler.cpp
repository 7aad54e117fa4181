#include "engine/sampling/rejection_sampler.hpp"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

// Residual mass at or below this is float rounding, not a real difference: softmax over
// a 128k vocab carries about 1e-7 relative error per entry. Falling back to p there
// changes the output distribution by at most this mass times the (tiny) rejection rate.
constexpr double kMinResidualMass = 1e-6;

[[noreturn]] void fail(const std::string& what) { throw SpecdError(ErrorCode::invalid_argument, what); }

// p(token) of a [vocab] probability vector; reads the one element without copying the row.
double prob_of(const at::Tensor& probs, int32_t token) {
  if (probs.dim() != 1) fail("a distribution must be a 1-D [vocab] tensor");
  if (token < 0 || token >= probs.size(0)) {
    fail("draft token " + std::to_string(token) + " is outside a vocab of " + std::to_string(probs.size(0)));
  }
  if (probs.is_cpu() && probs.scalar_type() == at::kFloat) {
    return probs.data_ptr<float>()[token * probs.stride(0)];
  }
  return probs[token].item<double>();
}

void check_sizes(size_t targets, size_t drafts, size_t tokens) {
  if (drafts != tokens || targets != tokens + 1) {
    fail("verify needs K+1 target rows and K draft rows for K draft tokens; got " + std::to_string(targets) +
         " target rows, " + std::to_string(drafts) + " draft rows, " + std::to_string(tokens) + " tokens");
  }
}

void check_tree(DraftTree tree, size_t draft_probs) {
  if (tree.parents.size() != tree.tokens.size()) fail("a draft tree needs one parent per node");
  if (draft_probs != 0 && draft_probs != tree.tokens.size()) fail("a draft tree needs one draft row per node");
  for (size_t i = 0; i < tree.parents.size(); ++i) {
    if (tree.parents[i] < -1 || tree.parents[i] >= static_cast<int32_t>(i)) {
      fail("draft tree node " + std::to_string(i) + " has parent " + std::to_string(tree.parents[i]) +
           ", not an earlier node or -1");
    }
  }
}

std::vector<int32_t> chain_parents(size_t k) {
  std::vector<int32_t> parents(k);
  for (size_t i = 0; i < k; ++i) parents[i] = static_cast<int32_t>(i) - 1;
  return parents;
}

VerifyOutcome chain_outcome(const TreeOutcome& tree) {
  return {static_cast<int32_t>(tree.path.size()), tree.next_token};
}

// The residual after rejecting a deterministic child: p without its token, renormalised.
at::Tensor point_residual(const at::Tensor& p, int32_t token) {
  at::Tensor q = at::zeros_like(p);
  q[token] = 1.0f;
  return residual_distribution(p, q);
}

}  // namespace

TreeOutcome verify_tree_greedy(const std::function<int32_t(int32_t row)>& target_choice, DraftTree tree) {
  check_tree(tree, 0);
  TreeOutcome out;
  int32_t node = -1;
  for (;;) {
    const int32_t choice = target_choice(node + 1);
    int32_t next = -1;
    for (size_t c = static_cast<size_t>(node + 1); c < tree.tokens.size() && next < 0; ++c) {
      if (tree.parents[c] == node && tree.tokens[c] == choice) next = static_cast<int32_t>(c);
    }
    if (next < 0) {
      out.next_token = choice;
      return out;
    }
    out.path.push_back(next);
    node = next;
  }
}

TreeOutcome verify_tree_sampled(const std::function<at::Tensor(int32_t row)>& target_probs,
                                std::span<const at::Tensor> draft_probs, DraftTree tree, Rng& rng) {
  check_tree(tree, draft_probs.size());
  TreeOutcome out;
  int32_t node = -1;
  for (;;) {
    std::vector<int32_t> children, deterministic;
    for (size_t c = static_cast<size_t>(node + 1); c < tree.tokens.size(); ++c) {
      if (tree.parents[c] != node) continue;
      const bool drawn = !draft_probs.empty() && draft_probs[c].defined();
      (drawn ? children : deterministic).push_back(static_cast<int32_t>(c));
    }
    children.insert(children.end(), deterministic.begin(), deterministic.end());
    at::Tensor p = target_probs(node + 1);
    int32_t accepted = -1;
    for (int32_t c : children) {
      const int32_t token = tree.tokens[c];
      const bool drawn = !draft_probs.empty() && draft_probs[c].defined();
      const double pg = prob_of(p, token);
      const double qg = drawn ? prob_of(draft_probs[c], token) : 1.0;
      const double u = rng.uniform();  // drawn even when q == 0, so the stream stays aligned
      // Division, not u * q < p: with p == q the ratio is exactly 1 and u < 1 always accepts.
      if (qg > 0 && u < pg / qg) {
        accepted = c;
        break;
      }
      p = drawn ? residual_distribution(p, draft_probs[c]) : point_residual(p, token);
    }
    if (accepted < 0) {
      out.next_token = draw_from(p, rng);
      return out;
    }
    out.path.push_back(accepted);
    node = accepted;
  }
}

VerifyOutcome verify_greedy(std::span<const int32_t> target_choices, std::span<const int32_t> draft_tokens) {
  check_sizes(target_choices.size(), draft_tokens.size(), draft_tokens.size());
  const std::vector<int32_t> parents = chain_parents(draft_tokens.size());
  return chain_outcome(verify_tree_greedy([&](int32_t row) { return target_choices[row]; }, {draft_tokens, parents}));
}

VerifyOutcome verify_sampled(std::span<const at::Tensor> target_probs, std::span<const at::Tensor> draft_probs,
                             std::span<const int32_t> draft_tokens, Rng& rng) {
  check_sizes(target_probs.size(), draft_probs.size(), draft_tokens.size());
  const std::vector<int32_t> parents = chain_parents(draft_tokens.size());
  return chain_outcome(
      verify_tree_sampled([&](int32_t row) { return target_probs[row]; }, draft_probs, {draft_tokens, parents}, rng));
}

at::Tensor residual_distribution(const at::Tensor& p, const at::Tensor& q) {
  if (p.sizes() != q.sizes()) fail("residual of distributions with different shapes");
  at::Tensor residual = (p - q).clamp_min_(0);
  const double mass = residual.sum().item<double>();
  if (!(mass > kMinResidualMass)) return p;
  return residual.div_(mass);
}

}  // namespace specd
