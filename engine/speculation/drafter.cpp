#include "engine/speculation/drafter.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/sampling.hpp"
#include "engine/speculation/prompt_lookup.hpp"
#include "engine/speculation/token_batch.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Draws the next draft token for a row from the draft's logits, keeping q for sampling.
// The row's context grows by each draft (the repetition penalty sees them).
void take_draft_token(DraftedRow& row, const at::Tensor& logits) {
  const SamplingParams& sp = row.plan.sampling;
  int32_t token;
  if (sp.greedy()) {
    token = static_cast<int32_t>(penalized_logits(logits, sp, row.plan.context).argmax().item<int64_t>());
  } else {
    at::Tensor q = sampling_distribution(logits, sp, row.plan.context);
    token = draw_from(q, row.plan.rng);
    row.draft_q.push_back(q);
  }
  row.drafts.push_back(token);
  row.plan.context.push_back(token);
}

}  // namespace

Drafter::Drafter(std::shared_ptr<LlamaModel> model, std::shared_ptr<KvCache> cache)
    : model_(std::move(model)), cache_(std::move(cache)) {
  if (!cache_) return;
  fed_.resize(static_cast<size_t>(cache_->slot_count()));
  for (int32_t slot = 0; slot < cache_->slot_count(); ++slot) cache_->set_length(slot, 0);
}

Drafter::~Drafter() = default;
Drafter::Drafter(Drafter&&) noexcept = default;

int64_t Drafter::keep_common_prefix(int32_t slot, std::span<const int32_t> context) {
  std::vector<int32_t>& fed = fed_.at(static_cast<size_t>(slot));
  // At least the last token is fed: its logits give the first draft.
  const auto most = static_cast<int64_t>(context.size()) - 1;
  int64_t keep = 0;
  if (fed.empty()) {
    keep = std::min(cache_->map_prefix(slot, context), most);
    fed.assign(context.begin(), context.begin() + keep);
  } else {
    const auto shared = std::mismatch(fed.begin(), fed.end(), context.begin(), context.end());
    keep = std::min<int64_t>(shared.first - fed.begin(), most);
    fed.resize(static_cast<size_t>(keep));
  }
  cache_->truncate_to(slot, keep);
  cache_->commit(slot, context.first(static_cast<size_t>(keep)));
  return keep;
}

void Drafter::release(int32_t draft_slot) {
  if (!cache_) return;
  cache_->release(draft_slot);
  fed_.at(static_cast<size_t>(draft_slot)).clear();
}

RoundDrafts Drafter::propose(RoundPlan& plan) {
  torch::InferenceMode inference;
  RoundDrafts result;
  result.rows.resize(plan.rows.size());
  std::vector<DraftedRow*> model_rows;
  for (size_t b = 0; b < plan.rows.size(); ++b) {
    DraftedRow& row = result.rows[b];
    row.plan = std::move(plan.rows[b]);
    if (row.plan.k == 0) continue;
    if (row.plan.drafter == DrafterKind::lookup) {
      row.drafts = propose_by_lookup(row.plan.context, row.plan.k, row.plan.lookup_max_ngram);
      row.plan.k = static_cast<int32_t>(row.drafts.size());
      row.plan.context.insert(row.plan.context.end(), row.drafts.begin(), row.drafts.end());
    } else if (model_ && row.plan.draft_slot >= 0) {
      model_rows.push_back(&row);
    } else {
      row.plan.k = 0;  // no draft model or slot: a plain target step
    }
  }
  const auto t0 = Clock::now();
  result.draft_steps = run_steps(model_rows, result.step_times);
  result.draft_seconds = seconds_since(t0);
  return result;
}

// K batched draft steps. After a drafting round a slot lacks at most the last draft and
// the target's token; a wider first step catches up a slot that fell behind (plain
// rounds, a reused slot): its time prices that catch-up, not a draft step, and in the
// cost curve it made the planner think drafting dear for many rounds after.
int32_t Drafter::run_steps(std::vector<DraftedRow*>& rows, std::vector<DraftStepTime>& times) {
  if (rows.empty()) return 0;
  constexpr size_t kDraftStepFeed = 2;
  int32_t steps = 0;
  for (int32_t j = 0;; ++j) {
    std::vector<DraftedRow*> active;
    for (DraftedRow* r : rows)
      if (r->plan.k > j) active.push_back(r);
    if (active.empty()) break;
    const auto step_start = Clock::now();
    std::vector<std::span<const int32_t>> feed;
    std::vector<int32_t> slots;
    size_t widest = 0;
    for (DraftedRow* r : active) {
      const std::vector<int32_t>& context = r->plan.context;
      const int64_t from = j == 0 ? keep_common_prefix(r->plan.draft_slot, context) : context.size() - 1;
      feed.emplace_back(context.data() + from, context.size() - static_cast<size_t>(from));
      std::vector<int32_t>& fed = fed_[static_cast<size_t>(r->plan.draft_slot)];
      fed.insert(fed.end(), feed.back().begin(), feed.back().end());
      widest = std::max(widest, feed.back().size());
      slots.push_back(r->plan.draft_slot);
    }
    std::vector<int64_t> lengths;
    at::Tensor logits =
        model_->forward({token_batch(feed, lengths), slots, lengths}, *cache_, LogitsFor::last_position);
    for (size_t b = 0; b < active.size(); ++b) take_draft_token(*active[b], logits[static_cast<int64_t>(b)]);
    if (widest <= kDraftStepFeed) times.push_back({static_cast<int32_t>(active.size()), seconds_since(step_start)});
    ++steps;
  }
  return steps;
}

void Drafter::prefill(std::span<const DraftPrefill> prompts) {
  if (prompts.empty() || !model_) return;
  torch::InferenceMode inference;
  std::vector<std::span<const int32_t>> rows;
  std::vector<int32_t> slots;
  for (const DraftPrefill& p : prompts) {
    const auto end = p.end < 0 ? static_cast<int64_t>(p.prompt.size()) : p.end;
    const std::span<const int32_t> wanted(p.prompt.data(), static_cast<size_t>(end));
    // What the slot or the prefix cache holds of the prompt, up to the chunk's end (the
    // prompt's last token is always computed: keep_common_prefix keeps one back).
    const auto upto = std::min(static_cast<size_t>(end) + 1, p.prompt.size());
    const int64_t keep = keep_common_prefix(p.draft_slot, std::span<const int32_t>(p.prompt).first(upto));
    std::vector<int32_t>& fed = fed_.at(static_cast<size_t>(p.draft_slot));
    fed.assign(wanted.begin(), wanted.end());
    if (keep == end) continue;
    rows.push_back(wanted.subspan(static_cast<size_t>(keep)));
    slots.push_back(p.draft_slot);
  }
  if (rows.empty()) return;
  std::vector<int64_t> lengths;
  model_->forward({token_batch(rows, lengths), slots, lengths}, *cache_, LogitsFor::last_position);
  for (const DraftPrefill& p : prompts) cache_->commit(p.draft_slot, fed_.at(static_cast<size_t>(p.draft_slot)));
}

}  // namespace specd
