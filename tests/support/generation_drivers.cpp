#include "tests/support/generation_drivers.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "engine/request/generate_request.hpp"

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/slot_pool.hpp"
#include "engine/planning/tree_plan.hpp"
#include "engine/request/request_output.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

// Non-owning: the caller keeps the model or cache alive for the driver's call.
template <class T>
std::shared_ptr<T> borrowed(T* p) {
  return std::shared_ptr<T>(std::shared_ptr<void>(), p);
}

struct Active {
  size_t index;
  std::unique_ptr<SpecSequence> seq;  // null once finished and released
  RequestOutput output;
  std::string text;
  Clock::time_point first_token_at;
};

// Slots for the driver's requests: its own allocator, as CacheManager is the engine's,
// and like it the slots' blocks go back when a request ends.
struct DriverSlots {
  SlotPool target;
  std::optional<SlotPool> draft;
  SpecModels& models;
  void release(const SpecSequence& seq) {
    models.target_cache.release(seq.target_slot);
    target.release(seq.target_slot);
    if (seq.draft_slot >= 0) {
      models.draft_cache->release(seq.draft_slot);
      draft->release(seq.draft_slot);
    }
  }
};

std::unique_ptr<SpecSequence> admit(DriverSlots& slots, const DriverRequest& r, const KPlanner& planner) {
  auto target_slot = slots.target.allocate();
  if (!target_slot) throw SpecdError(ErrorCode::out_of_capacity, "no free target KV slot");
  int32_t draft_slot = -1;
  if (slots.draft && r.spec.enabled && r.spec.drafter == DrafterKind::model) {
    auto slot = slots.draft->allocate();
    if (!slot) {
      slots.target.release(*target_slot);
      throw SpecdError(ErrorCode::out_of_capacity, "no free draft KV slot");
    }
    draft_slot = *slot;
  }
  auto seq = std::make_unique<SpecSequence>(r.prompt, *target_slot, draft_slot, r.sampling, r.spec,
                                            planner.start(r.spec, draft_slot >= 0));
  if (r.grammar) seq->grammar.emplace(r.grammar);
  return seq;
}

// Applies a burst through the request's output; true when the request has ended.
bool deliver(Active& a, SpecResult& res, std::span<const int32_t> tokens, int32_t drafted, int32_t accepted,
             std::span<const TokenLogprobs> logprobs) {
  Burst chunk = a.output.take(tokens, drafted, accepted, logprobs);
  res.tokens.insert(res.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
  res.logprobs.insert(res.logprobs.end(), chunk.logprobs.begin(), chunk.logprobs.end());
  a.text += chunk.text;
  if (!a.output.finished()) return false;
  res.finish_reason = *a.output.finished();
  return true;
}

// Final bookkeeping of a request that stopped: text, statistics, slots back.
void finish(DriverSlots& slots, Active& a, SpecResult& res) {
  res.stats = a.output.stats();
  res.decode_seconds = std::chrono::duration<double>(Clock::now() - a.first_token_at).count();
  res.text = a.text + a.output.flush();
  slots.release(*a.seq);
  a.seq.reset();
}

Active make_active(size_t index, std::unique_ptr<SpecSequence> seq, const DriverRequest& r, const Tokenizer* tokenizer,
                   int64_t max_seq_len) {
  OutputLimits limits{r.eos_ids, r.stop, r.max_tokens, static_cast<int64_t>(r.prompt.size()), max_seq_len};
  return Active{index, std::move(seq), RequestOutput(tokenizer, std::move(limits)), {}, {}};
}

// Prefills every request and keeps those its first token does not end.
std::vector<Active> prefill_all(Verifier& verifier, KvLedger& ledger, DriverSlots& slots, std::vector<Active>& active,
                                std::vector<SpecResult>& results) {
  std::vector<TargetPrefill> prompts;
  for (auto& a : active) {
    prompts.push_back({.target_slot = a.seq->target_slot,
                       .prompt = a.seq->tokens,
                       .sampling = a.seq->sampling,
                       .rng = a.seq->rng,
                       .grammar = a.seq->grammar});
  }
  const auto t0 = Clock::now();
  const std::vector<FirstToken> first = verifier.prefill(ledger, prompts);
  const double prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<Active> running;
  for (size_t b = 0; b < active.size(); ++b) {
    Active& a = active[b];
    SpecResult& res = results[a.index];
    res.prefill_seconds = prefill_seconds;
    a.first_token_at = Clock::now();
    advance_grammar(*a.seq, std::span(&first[b].token, 1));
    a.seq->tokens.push_back(first[b].token);
    a.seq->rng = first[b].rng;
    const int32_t token = first[b].token;
    if (deliver(a, res, std::span(&token, 1), 0, 0, first[b].logprobs)) {
      finish(slots, a, res);
    } else {
      running.push_back(std::move(a));
    }
  }
  return running;
}

// `auto_tree_extra`: per row, the pinned extra nodes of an `auto` tree (empty: none pinned).
RoundResult run_planned_round(KPlanner& planner, Drafter& drafter, KvLedger* draft_ledger, Verifier& verifier,
                              KvLedger& ledger, std::span<SpecSequence* const> batch, std::span<const int32_t> max_new,
                              std::span<const std::optional<int32_t>> auto_tree_extra = {}) {
  const auto start = Clock::now();
  std::vector<RunningRequest> rows;
  for (size_t i = 0; i < batch.size(); ++i) rows.push_back(running_request(*batch[i], max_new[i]));
  const KPlan planned = planner.plan(rows);
  RoundPlan plan;
  for (size_t i = 0; i < batch.size(); ++i) {
    TreeShape tree = planned.trees[i];
    if (i < auto_tree_extra.size() && auto_tree_extra[i] && planned.k[i] > 0) {
      tree = auto_tree_shape(planned.k[i], batch[i]->spec.drafter, *auto_tree_extra[i]);
    }
    plan.rows.push_back(plan_row(*batch[i], planned.k[i], std::move(tree)));
  }
  RoundDrafts drafts = drafter.propose(draft_ledger, plan);
  RoundResult round = verifier.verify(ledger, drafts);
  std::vector<KOutcome> outcomes;
  for (size_t i = 0; i < batch.size(); ++i) {
    apply_output(*batch[i], round.rows[i]);
    outcomes.push_back(k_outcome(*batch[i], round.rows[i]));
  }
  planner.observe(outcomes, round, std::chrono::duration<double>(Clock::now() - start).count());
  return round;
}

// The engine's bound as a configuration that admits every request would set it.
int32_t largest_k(const std::vector<DriverRequest>& requests) {
  int32_t k_max = 0;
  for (const auto& r : requests) {
    // An adaptive request without its own bound takes the engine's (EngineConfig's 8).
    k_max = std::max(k_max, r.spec.adaptive ? (r.spec.k_max > 0 ? r.spec.k_max : 8) : r.spec.k);
    k_max = std::max(k_max, static_cast<int32_t>(r.spec.tree.widths.size()));  // a fixed tree's depth
  }
  return k_max;
}

}  // namespace

Drafter borrow_drafter(SpecModels& m) {
  return Drafter(borrowed(m.draft), m.draft_cache ? m.draft_cache->storage() : nullptr);
}
Verifier borrow_verifier(SpecModels& m) { return Verifier(borrowed(&m.target), m.target_cache.storage()); }

RoundResult speculative_round(KPlanner& planner, Drafter& drafter, Verifier& verifier, SpecModels& m,
                              std::span<SpecSequence* const> batch) {
  const std::vector<int32_t> max_new(batch.size(), 1 << 30);
  return run_planned_round(planner, drafter, m.draft_cache, verifier, m.target_cache, batch, max_new);
}

std::vector<SpecResult> generate_speculative(SpecModels& m, const std::vector<DriverRequest>& requests,
                                             const Tokenizer* tokenizer) {
  const int64_t max_seq_len = m.target_cache.max_seq_len();
  for (const auto& r : requests) {
    if (!r.stop.empty() && !tokenizer) throw SpecdError(ErrorCode::bad_value, "stop strings need a tokenizer");
    GenerateRequest request;
    request.prompt_ids = r.prompt;
    request.sampling = r.sampling;
    request.max_tokens = r.max_tokens;
    request.stop = r.stop;
    request.spec = r.spec;
    validate_request(request, r.prompt,
                     {.vocab_size = static_cast<int32_t>(m.target.config().vocab_size),
                      .sequence = {.max_seq_len = max_seq_len, .k_max = largest_k(requests)}});
  }
  torch::InferenceMode inference;
  KPlanner planner(
      {.sequence = {.max_seq_len = max_seq_len, .k_max = largest_k(requests)}, .has_draft_model = m.draft != nullptr});
  Drafter drafter = borrow_drafter(m);
  Verifier verifier = borrow_verifier(m);
  DriverSlots slots{SlotPool(m.target_cache.slot_count()), std::nullopt, m};
  if (m.draft_cache) slots.draft.emplace(m.draft_cache->slot_count());
  std::vector<SpecResult> results(requests.size());
  std::vector<Active> active;
  for (size_t i = 0; i < requests.size(); ++i)
    active.push_back(make_active(i, admit(slots, requests[i], planner), requests[i], tokenizer, max_seq_len));
  active = prefill_all(verifier, m.target_cache, slots, active, results);
  while (!active.empty()) {
    std::vector<SpecSequence*> seqs;
    std::vector<int32_t> max_new;
    std::vector<std::optional<int32_t>> auto_tree_extra;
    for (auto& a : active) {
      max_new.push_back(requests[a.index].max_tokens - static_cast<int32_t>(results[a.index].tokens.size()));
      seqs.push_back(a.seq.get());
      auto_tree_extra.push_back(requests[a.index].auto_tree_extra);
    }
    const RoundResult round =
        run_planned_round(planner, drafter, m.draft_cache, verifier, m.target_cache, seqs, max_new, auto_tree_extra);
    std::vector<Active> running;
    for (size_t b = 0; b < active.size(); ++b) {
      Active& a = active[b];
      SpecResult& res = results[a.index];
      const RoundOutput& row = round.rows[b];
      if (row.drafted > 0) res.draft_steps += round.draft_steps;
      if (deliver(a, res, row.tokens, row.drafted, row.accepted, row.logprobs)) {
        finish(slots, a, res);
      } else {
        running.push_back(std::move(a));
      }
    }
    active = std::move(running);
  }
  return results;
}

// ---- target-only reference ----

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

at::Tensor last_logits(LlamaModel& model, KvCache& cache, int32_t slot, const std::vector<int32_t>& ids) {
  ForwardBatch batch{at::tensor(ids, at::kInt).to(at::kLong).unsqueeze(0), {slot}, {static_cast<int64_t>(ids.size())}};
  return model.forward(batch, cache, LogitsFor::last_position)[0];
}

}  // namespace

std::optional<at::Tensor> masked_by_hand(const at::Tensor& logits, grammar::GrammarMatcher& state) {
  grammar::TokenBitset allowed;
  state.fill_mask(allowed);
  if (allowed.count() == 0) return std::nullopt;
  at::Tensor out = logits.to(at::kFloat).clone();
  float* row = out.data_ptr<float>();
  for (int64_t id = 0; id < out.numel(); ++id) {
    if (id >= static_cast<int64_t>(allowed.size()) || !allowed.test(static_cast<int32_t>(id)))
      row[id] = -std::numeric_limits<float>::infinity();
  }
  return out;
}

GenerationResult generate_target_only(LlamaModel& model, KvCache& cache, const GenerationRequest& request,
                                      const TokenCallback& on_token) {
  validate(request.sampling);
  if (request.prompt.empty()) throw SpecdError(ErrorCode::invalid_argument, "the prompt has no tokens");
  if (request.max_tokens < 1) throw SpecdError(ErrorCode::invalid_argument, "max_tokens must be >= 1");
  if (static_cast<int64_t>(request.prompt.size()) >= cache.max_seq_len()) {
    throw SpecdError(ErrorCode::out_of_capacity, "prompt of " + std::to_string(request.prompt.size()) +
                                                     " tokens does not fit max_seq_len " +
                                                     std::to_string(cache.max_seq_len()));
  }
  const int32_t slot = 0;  // the reference runs alone on its cache
  cache.set_length(slot, 0);
  torch::InferenceMode inference;
  Rng rng(request.sampling.seed);
  GenerationResult result;
  std::vector<int32_t> context = request.prompt;

  auto t0 = Clock::now();
  at::Tensor logits = last_logits(model, cache, slot, request.prompt);
  result.prefill_seconds = seconds_since(t0);
  auto t1 = Clock::now();
  std::optional<grammar::GrammarMatcher> grammar;
  if (request.grammar) grammar.emplace(request.grammar);
  while (true) {
    at::Tensor scored = logits;
    if (grammar) {
      std::optional<at::Tensor> masked = masked_by_hand(logits, *grammar);
      if (!masked) break;
      scored = std::move(*masked);
    }
    const int32_t token =
        sample_token(scored, request.sampling, {context, static_cast<int64_t>(request.prompt.size())}, rng);
    if (grammar && !grammar->accept_token(token)) throw SpecdError(ErrorCode::internal, "reference left the grammar");
    result.tokens.push_back(token);
    if (request.sampling.logprobs >= 0)
      result.logprobs.push_back(token_logprobs(logits, token, request.sampling.logprobs));
    context.push_back(token);
    const bool eos = std::find(request.eos_ids.begin(), request.eos_ids.end(), token) != request.eos_ids.end();
    const bool keep_going = !on_token || on_token(token);
    if (eos || !keep_going) {
      result.finish_reason = FinishReason::stop;
      break;
    }
    if (static_cast<int32_t>(result.tokens.size()) >= request.max_tokens ||
        cache.length(slot) + 1 > cache.max_seq_len()) {
      result.finish_reason = FinishReason::length;
      break;
    }
    logits = last_logits(model, cache, slot, {token});
  }
  result.decode_seconds = seconds_since(t1);
  return result;
}

}  // namespace specd
