#include "engine/sampling/rejection_sampler.hpp"

#include <ATen/ATen.h>

#include <string>

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

}  // namespace

VerifyOutcome verify_greedy(std::span<const int32_t> target_choices, std::span<const int32_t> draft_tokens) {
  check_sizes(target_choices.size(), draft_tokens.size(), draft_tokens.size());
  VerifyOutcome out;
  while (static_cast<size_t>(out.accepted) < draft_tokens.size() &&
         target_choices[out.accepted] == draft_tokens[out.accepted]) {
    ++out.accepted;
  }
  out.next_token = target_choices[out.accepted];
  return out;
}

VerifyOutcome verify_sampled(std::span<const at::Tensor> target_probs, std::span<const at::Tensor> draft_probs,
                             std::span<const int32_t> draft_tokens, Rng& rng) {
  check_sizes(target_probs.size(), draft_probs.size(), draft_tokens.size());
  VerifyOutcome out;
  for (size_t i = 0; i < draft_tokens.size(); ++i) {
    const double p = prob_of(target_probs[i], draft_tokens[i]);
    const double q = prob_of(draft_probs[i], draft_tokens[i]);
    const double u = rng.uniform();  // drawn even when q == 0, so the stream stays aligned
    // Division, not u * q < p: with p == q the ratio is exactly 1 and u < 1 always accepts.
    if (q > 0 && u < p / q) {
      ++out.accepted;
      continue;
    }
    out.next_token = draw_from(residual_distribution(target_probs[i], draft_probs[i]), rng);
    return out;
  }
  out.next_token = draw_from(target_probs[draft_tokens.size()], rng);  // bonus after K accepts
  return out;
}

at::Tensor residual_distribution(const at::Tensor& p, const at::Tensor& q) {
  if (p.sizes() != q.sizes()) fail("residual of distributions with different shapes");
  at::Tensor residual = (p - q).clamp_min_(0);
  const double mass = residual.sum().item<double>();
  if (!(mass > kMinResidualMass)) return p;
  return residual.div_(mass);
}

}  // namespace specd
