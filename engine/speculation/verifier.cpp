#include "engine/speculation/verifier.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/rejection_sampler.hpp"
#include "engine/sampling/sampling.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A deterministic proposal is a draft distribution with all mass on the proposed token.
at::Tensor one_hot(int32_t token, int64_t vocab) {
  at::Tensor q = at::zeros({vocab}, at::kFloat);
  q[token] = 1.0f;
  return q;
}

// Position j sees the context plus t1..tj, as target-only decoding would have: a prefix
// of row.plan.context, which holds the context followed by every draft.
VerifyOutcome accept_reject(DraftedRow& row, const at::Tensor& logits) {
  const SamplingParams& sp = row.plan.sampling;
  const int32_t k = row.plan.k;
  if (sp.greedy() && sp.repetition_penalty == 1.0) {  // argmax needs no context
    std::vector<int32_t> choices;
    at::Tensor best = logits.narrow(0, 0, k + 1).argmax(-1);
    for (int32_t j = 0; j <= k; ++j) choices.push_back(static_cast<int32_t>(best[j].item<int64_t>()));
    return verify_greedy(choices, row.drafts);
  }
  const std::span<const int32_t> all(row.plan.context);
  const size_t base = all.size() - row.drafts.size();
  if (sp.greedy()) {
    std::vector<int32_t> choices;
    for (int32_t j = 0; j <= k; ++j) {
      choices.push_back(
          static_cast<int32_t>(penalized_logits(logits[j], sp, all.first(base + j)).argmax().item<int64_t>()));
    }
    return verify_greedy(choices, row.drafts);
  }
  std::vector<at::Tensor> p;
  for (int32_t j = 0; j <= k; ++j) p.push_back(sampling_distribution(logits[j], sp, all.first(base + j)));
  if (row.draft_q.empty()) {
    for (int32_t t : row.drafts) row.draft_q.push_back(one_hot(t, logits.size(-1)));
  }
  return verify_sampled(p, row.draft_q, row.drafts, row.plan.rng);
}

}  // namespace

Verifier::Verifier(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache)
    : model_(std::move(model)), cache_(std::move(cache)) {}

Verifier::~Verifier() = default;
Verifier::Verifier(Verifier&&) noexcept = default;

void Verifier::map_prefixes(std::span<TargetPrefill> chunks) {
  for (TargetPrefill& p : chunks) {
    if (p.start != 0) continue;
    cache_->release(p.target_slot);
    p.cached = p.use_prefix_cache ? cache_->map_prefix(p.target_slot, p.prompt) : 0;
    if (p.cached > 0) {
      const int64_t width = p.chunk_end();
      p.start = p.cached;
      p.end = std::min<int64_t>(static_cast<int64_t>(p.prompt.size()), p.cached + width);
    }
  }
}

std::vector<FirstToken> Verifier::prefill(std::span<TargetPrefill> prompts) {
  map_prefixes(prompts);
  RoundDrafts none;
  return pass(none, prompts).first_tokens;
}

RoundResult Verifier::verify(RoundDrafts& drafts) { return pass(drafts, {}).round; }

TargetPassResult Verifier::pass(RoundDrafts& drafts, std::span<TargetPrefill> chunks) {
  torch::InferenceMode inference;
  const auto phase_start = Clock::now();
  TargetPassResult out;
  RoundResult& result = out.round;
  result.draft_steps = drafts.draft_steps;
  result.draft_seconds = drafts.draft_seconds;
  result.draft_step_times = drafts.step_times;
  // Verify rows [g, t1..tK] first, then each chunk's prompt tokens (its last row's logits).
  std::vector<ForwardSegment> segments;
  std::vector<int64_t> starts;
  for (DraftedRow& row : drafts.rows) {
    const std::vector<int32_t>& context = row.plan.context;  // the context, then the drafts
    const size_t base = context.size() - row.drafts.size();
    if (static_cast<int64_t>(base) > cache_->max_seq_len()) {
      throw SpecdError(ErrorCode::out_of_capacity, "speculative round: a sequence has no room left in the KV cache");
    }
    segments.push_back({std::span<const int32_t>(context.data() + base - 1, row.drafts.size() + 1),
                        row.plan.target_slot, LogitsFor::all_positions});
    starts.push_back(cache_->length(row.plan.target_slot));
    result.verify_tokens += row.plan.k + 1;
  }
  for (TargetPrefill& p : chunks) {
    cache_->set_length(p.target_slot, p.start);
    segments.push_back({std::span<const int32_t>(p.prompt).subspan(p.start, p.chunk_end() - p.start), p.target_slot,
                        LogitsFor::last_position});
    result.chunk_tokens += static_cast<int32_t>(p.chunk_end() - p.start);
  }
  if (segments.empty()) return out;
  const auto t0 = Clock::now();
  const at::Tensor logits = model_->forward(segments, *cache_);
  result.verify_seconds = seconds_since(t0);
  int64_t at = 0;  // the logits' rows, segment by segment
  for (size_t b = 0; b < drafts.rows.size(); ++b) {
    DraftedRow& row = drafts.rows[b];
    const int64_t width = row.plan.k + 1;
    const VerifyOutcome outcome = accept_reject(row, logits.narrow(0, at, width));
    at += width;
    cache_->truncate_to(row.plan.target_slot, starts[b] + outcome.accepted + 1);
    // The slot now holds the context and the accepted drafts: all of them kept.
    cache_->commit(
        row.plan.target_slot,
        std::span<const int32_t>(row.plan.context).first(static_cast<size_t>(starts[b] + outcome.accepted + 1)));
    RoundOutput row_out;
    row_out.tokens.assign(row.drafts.begin(), row.drafts.begin() + outcome.accepted);
    row_out.tokens.push_back(outcome.next_token);
    row_out.drafted = row.plan.k;
    row_out.accepted = outcome.accepted;
    row_out.rng = row.plan.rng;
    result.rows.push_back(std::move(row_out));
  }
  for (TargetPrefill& p : chunks) {
    const at::Tensor last = logits[at++];
    cache_->commit(p.target_slot, std::span<const int32_t>(p.prompt).first(p.chunk_end()));
    if (!p.completes() || !p.sample) continue;
    const int32_t token = sample_token(last, p.sampling, p.prompt, p.rng);
    out.first_tokens.push_back({token, p.rng});
  }
  if (!drafts.rows.empty()) {
    result.verify_start = phase_start;
    result.verify_phase_seconds = seconds_since(phase_start);
  }
  return out;
}

void Verifier::release(int32_t target_slot) { cache_->release(target_slot); }

}  // namespace specd
