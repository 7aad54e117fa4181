#include "engine/speculation/speculative_round.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/planning/batch_k_planner.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/sampling/rejection_sampler.hpp"
#include "engine/speculation/prompt_lookup.hpp"

namespace specd {

DraftedRow::DraftedRow() = default;
DraftedRow::~DraftedRow() = default;
DraftedRow::DraftedRow(DraftedRow&&) noexcept = default;
DraftedRow& DraftedRow::operator=(DraftedRow&&) noexcept = default;

SpecSequence::SpecSequence(std::vector<int32_t> context, int32_t target_slot_, int32_t draft_slot_,
                           SamplingParams sampling_, SpecSettings spec_, double cost_ratio, double acceptance_prior)
    : tokens(std::move(context)),
      target_slot(target_slot_),
      draft_slot(draft_slot_),
      sampling(sampling_),
      rng(sampling_.seed),
      spec(spec_),
      adaptive(cost_ratio, spec_.k_max, kDefaultProbeEvery, acceptance_prior) {}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

at::Tensor to_batch(const std::vector<std::vector<int32_t>>& rows, std::vector<int64_t>& lengths) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  at::Tensor out = at::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, at::kLong);
  auto acc = out.accessor<int64_t, 2>();
  lengths.clear();
  for (size_t b = 0; b < rows.size(); ++b) {
    for (size_t t = 0; t < rows[b].size(); ++t) acc[b][t] = rows[b][t];
    lengths.push_back(static_cast<int64_t>(rows[b].size()));
  }
  return out;
}

// Draws the next draft token for a row from the draft's logits, keeping q for sampling.
void take_draft_token(DraftedRow& row, const at::Tensor& logits) {
  const SamplingParams& sp = row.seq->sampling;
  int32_t token;
  if (sp.greedy()) {
    token = static_cast<int32_t>(penalized_logits(logits, sp, row.context).argmax().item<int64_t>());
  } else {
    at::Tensor q = sampling_distribution(logits, sp, row.context);
    token = draw_from(q, row.seq->rng);
    row.draft_q.push_back(q);
  }
  row.drafts.push_back(token);
  row.context.push_back(token);
}

// K batched draft steps. The first step feeds every token the draft has not seen yet
// (the whole context for a newcomer: lazy prefill; emitted tokens otherwise: catch-up).
int32_t run_draft(SpecModels& m, std::vector<DraftedRow*>& rows, std::vector<DraftStepTime>& times) {
  if (rows.empty()) return 0;
  auto step_start = Clock::now();
  std::vector<std::vector<int32_t>> feed;
  std::vector<int32_t> slots;
  size_t widest = 0;
  for (DraftedRow* r : rows) {
    const int64_t seen = m.draft_cache->length(r->seq->draft_slot);
    feed.emplace_back(r->seq->tokens.begin() + seen, r->seq->tokens.end());
    widest = std::max(widest, feed.back().size());
    slots.push_back(r->seq->draft_slot);
  }
  std::vector<int64_t> lengths;
  at::Tensor logits =
      m.draft->forward({to_batch(feed, lengths), slots, lengths}, *m.draft_cache, LogitsFor::last_position);
  for (size_t b = 0; b < rows.size(); ++b) take_draft_token(*rows[b], logits[b]);
  // After a drafting round a row's draft cache lacks at most the last draft and the
  // target's token. A wider first step catches up a cache that fell behind (plain
  // rounds, a reused slot): its time prices that catch-up, not a draft step, and in the
  // cost curve it made the planner think drafting dear for many rounds after.
  constexpr size_t kDraftStepFeed = 2;
  if (widest <= kDraftStepFeed) times.push_back({static_cast<int32_t>(rows.size()), seconds_since(step_start)});
  int32_t steps = 1;
  for (int32_t j = 1;; ++j, ++steps) {
    std::vector<DraftedRow*> active;
    for (DraftedRow* r : rows)
      if (r->k > j) active.push_back(r);
    if (active.empty()) break;
    step_start = Clock::now();
    std::vector<std::vector<int32_t>> step_feed;
    slots.clear();
    for (DraftedRow* r : active) {
      step_feed.push_back({r->drafts.back()});
      slots.push_back(r->seq->draft_slot);
    }
    logits = m.draft->forward({to_batch(step_feed, lengths), slots, lengths}, *m.draft_cache, LogitsFor::last_position);
    for (size_t b = 0; b < active.size(); ++b) take_draft_token(*active[b], logits[b]);
    times.push_back({static_cast<int32_t>(active.size()), seconds_since(step_start)});
  }
  return steps;
}

// A deterministic proposal is a draft distribution with all mass on the proposed token.
at::Tensor one_hot(int32_t token, int64_t vocab) {
  at::Tensor q = at::zeros({vocab}, at::kFloat);
  q[token] = 1.0f;
  return q;
}

VerifyOutcome accept_reject(DraftedRow& row, const at::Tensor& logits) {
  SpecSequence& seq = *row.seq;
  const int32_t k = row.k;
  if (seq.sampling.greedy() && seq.sampling.repetition_penalty == 1.0) {  // argmax needs no context
    std::vector<int32_t> choices;
    at::Tensor best = logits.narrow(0, 0, k + 1).argmax(-1);
    for (int32_t j = 0; j <= k; ++j) choices.push_back(static_cast<int32_t>(best[j].item<int64_t>()));
    return verify_greedy(choices, row.drafts);
  }
  // Position j sees the context plus t1..tj, as target-only decoding would have:
  // a prefix of row.context, which holds the context followed by every draft.
  const std::span<const int32_t> all(row.context);
  const size_t base = seq.tokens.size();
  if (seq.sampling.greedy()) {
    std::vector<int32_t> choices;
    for (int32_t j = 0; j <= k; ++j) {
      choices.push_back(static_cast<int32_t>(
          penalized_logits(logits[j], seq.sampling, all.first(base + j)).argmax().item<int64_t>()));
    }
    return verify_greedy(choices, row.drafts);
  }
  std::vector<at::Tensor> p;
  for (int32_t j = 0; j <= k; ++j) p.push_back(sampling_distribution(logits[j], seq.sampling, all.first(base + j)));
  if (row.draft_q.empty()) {
    for (int32_t t : row.drafts) row.draft_q.push_back(one_hot(t, logits.size(-1)));
  }
  return verify_sampled(p, row.draft_q, row.drafts, seq.rng);
}

}  // namespace

int32_t plan_k(const SpecModels& m, SpecSequence& seq) {
  if (!seq.spec.enabled) return 0;
  const bool model_drafter = seq.spec.drafter == DrafterKind::model;
  if (model_drafter && (!m.draft || seq.draft_slot < 0)) return 0;
  int64_t k = seq.planned_k >= 0 ? seq.planned_k : seq.spec.adaptive ? seq.adaptive.next_k() : seq.spec.k;
  const auto n = static_cast<int64_t>(seq.tokens.size());
  k = std::min<int64_t>(k, m.target_cache.max_seq_len() - n);  // verify writes g and K drafts after n-1 tokens
  if (model_drafter) k = std::min<int64_t>(k, m.draft_cache->max_seq_len() - n + 1);
  k = std::min<int64_t>(k, seq.max_new_this_round - 1);  // never draft past max_tokens
  return static_cast<int32_t>(std::max<int64_t>(k, 0));
}

namespace {

void apply_pending_draft_truncation(SpecModels& m, SpecSequence& seq) {
  if (seq.draft_keep < 0) return;
  if (seq.draft_slot >= 0) {
    m.draft_cache->truncate_to(seq.draft_slot, std::min(m.draft_cache->length(seq.draft_slot), seq.draft_keep));
  }
  seq.draft_keep = -1;
}

}  // namespace

RoundDrafts draft_phase(SpecModels& m, std::span<SpecSequence* const> batch) {
  torch::InferenceMode inference;
  RoundDrafts result;
  result.rows.resize(batch.size());
  std::vector<DraftedRow*> model_rows;
  for (size_t b = 0; b < batch.size(); ++b) {
    DraftedRow& row = result.rows[b];
    row.seq = batch[b];
    if (static_cast<int64_t>(row.seq->tokens.size()) > m.target_cache.max_seq_len()) {
      throw SpecdError(ErrorCode::out_of_capacity, "speculative_round: a sequence has no room left in the KV cache");
    }
    row.k = plan_k(m, *row.seq);
    row.seq->planned_k = -1;
    row.context = row.seq->tokens;
    if (row.k == 0) continue;
    if (row.seq->spec.drafter == DrafterKind::lookup) {
      row.drafts = propose_by_lookup(row.seq->tokens, row.k, row.seq->spec.lookup_max_ngram);
      row.k = static_cast<int32_t>(row.drafts.size());
      row.context.insert(row.context.end(), row.drafts.begin(), row.drafts.end());
    } else {
      apply_pending_draft_truncation(m, *row.seq);
      model_rows.push_back(&row);
    }
  }
  const auto t0 = Clock::now();
  result.draft_steps = run_draft(m, model_rows, result.step_times);
  result.draft_seconds = seconds_since(t0);
  return result;
}

RoundResult verify_phase(SpecModels& m, RoundDrafts& drafts) {
  torch::InferenceMode inference;
  const auto phase_start = Clock::now();
  RoundResult result;
  result.draft_steps = drafts.draft_steps;
  result.draft_seconds = drafts.draft_seconds;
  result.draft_step_times = drafts.step_times;
  std::vector<DraftedRow>& rows = drafts.rows;
  // One batched target pass over [g, t1..tK] per row.
  std::vector<std::vector<int32_t>> feed;
  std::vector<int32_t> slots;
  std::vector<int64_t> starts;
  for (DraftedRow& row : rows) {
    feed.push_back({row.seq->tokens.back()});
    feed.back().insert(feed.back().end(), row.drafts.begin(), row.drafts.end());
    slots.push_back(row.seq->target_slot);
    starts.push_back(m.target_cache.length(row.seq->target_slot));
    result.verify_tokens += row.k + 1;
  }
  std::vector<int64_t> lengths;
  const auto t0 = Clock::now();
  at::Tensor logits =
      m.target.forward({to_batch(feed, lengths), slots, lengths}, m.target_cache, LogitsFor::all_positions);
  result.verify_seconds = seconds_since(t0);

  for (size_t b = 0; b < rows.size(); ++b) {
    DraftedRow& row = rows[b];
    SpecSequence& seq = *row.seq;
    const VerifyOutcome outcome = accept_reject(row, logits[b]);
    const int64_t before = static_cast<int64_t>(seq.tokens.size());
    m.target_cache.truncate_to(seq.target_slot, starts[b] + outcome.accepted + 1);
    if (seq.spec.drafter == DrafterKind::model && row.k > 0) {
      // The draft saw the context and t1..t(k-1); it keeps what the target accepted.
      // Applied by the draft phase (on the draft lane, which owns the draft cache).
      seq.draft_keep = before + outcome.accepted;
    }
    RoundOutput out;
    out.tokens.assign(row.drafts.begin(), row.drafts.begin() + outcome.accepted);
    out.tokens.push_back(outcome.next_token);
    out.drafted = row.k;
    out.accepted = outcome.accepted;
    seq.tokens.insert(seq.tokens.end(), out.tokens.begin(), out.tokens.end());
    if (row.k > 0) {
      seq.stats.record(row.k, outcome.accepted);
      seq.adaptive.observe(row.k, outcome.accepted);  // also fixed-K rows: the batch planner reads it
    }
    result.rows.push_back(std::move(out));
  }
  result.verify_phase_seconds = seconds_since(phase_start);
  return result;
}

std::optional<BatchPlan> plan_batch(std::span<SpecSequence* const> batch, const RoundCostModel& costs,
                                    int64_t max_seq_len, bool has_draft_model) {
  if (!costs.verify_ready()) return std::nullopt;
  std::vector<PlanRow> rows;
  int32_t k_max = 0;
  bool needs_draft_curve = false;
  for (const SpecSequence* seq : batch) {
    PlanRow row;
    const bool model_drafter = seq->spec.drafter == DrafterKind::model;
    const bool can_draft = seq->spec.enabled && (!model_drafter || (has_draft_model && seq->draft_slot >= 0));
    row.acceptance = seq->adaptive.acceptance();
    row.draft_model = model_drafter;
    if (can_draft && seq->spec.adaptive) {
      // Lookup rows too: their drafts cost no draft steps, but each widens the verify
      // pass, which on a busy batch costs more than the drafts are expected to return.
      const auto n = static_cast<int64_t>(seq->tokens.size());
      const int64_t room = std::min<int64_t>({seq->spec.k_max, max_seq_len - n, seq->max_new_this_round - 1});
      row.plannable = true;
      row.k_cap = static_cast<int32_t>(std::max<int64_t>(room, 0));
      k_max = std::max(k_max, row.k_cap);
      needs_draft_curve |= model_drafter && row.k_cap > 0;
    } else if (can_draft) {
      row.fixed_k = seq->spec.k;  // an upper bound for lookup rows, which may find fewer
      needs_draft_curve |= model_drafter && row.fixed_k > 0;
    }
    rows.push_back(row);
  }
  if (needs_draft_curve && !costs.draft_ready()) return std::nullopt;
  const BatchPlan plan = plan_batch_k(rows, costs, k_max, {kRefreshUndraftedAfter});
  for (size_t i = 0; i < batch.size(); ++i) {
    if (rows[i].plannable) batch[i]->planned_k = plan.k[i];
  }
  return plan;
}

void record_round_costs(RoundCostModel& costs, const RoundResult& round) {
  for (const DraftStepTime& step : round.draft_step_times) costs.observe_draft_step(step.rows, step.seconds);
  if (round.verify_tokens > 0) costs.observe_verify(round.verify_tokens, round.verify_phase_seconds);
}

RoundResult speculative_round(SpecModels& m, std::span<SpecSequence* const> batch) {
  RoundDrafts drafts = draft_phase(m, batch);
  return verify_phase(m, drafts);
}

}  // namespace specd
