#include "tests/support/generation_drivers.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/request/stop_conditions.hpp"
#include "engine/speculation/prefill.hpp"
#include "engine/tokenizer/stream_detokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

struct Active {
  size_t index;
  std::unique_ptr<SpecSequence> seq;  // null once finished and released
  std::optional<StopStringMatcher> stop;
  std::optional<StreamDetokenizer> detokenizer;  // feeds the stop matcher, with stop strings only
  std::string stop_text;
  bool stopped_by_string = false;
  Clock::time_point first_token_at;
};

// Feeds the text a newly accepted token completes to the stop matcher.
bool feed_stop(Active& a, int32_t token) {
  auto result = a.stop->feed(a.detokenizer->push(token));
  a.stop_text += result.emit;
  return result.stopped;
}

// Applies stop conditions to a burst in order; returns true when the request ends.
bool accept_burst(Active& a, const SpecRequest& req, SpecResult& res, const std::vector<int32_t>& burst) {
  for (int32_t token : burst) {
    res.tokens.push_back(token);
    if (std::find(req.eos_ids.begin(), req.eos_ids.end(), token) != req.eos_ids.end()) {
      res.finish_reason = FinishReason::stop;
      return true;
    }
    if (a.stop && feed_stop(a, token)) {
      res.finish_reason = FinishReason::stop;
      a.stopped_by_string = true;
      return true;
    }
    if (static_cast<int32_t>(res.tokens.size()) >= req.max_tokens) {
      res.finish_reason = FinishReason::length;
      return true;
    }
  }
  return false;
}

}  // namespace

namespace {

std::unique_ptr<SpecSequence> admit(SpecModels& m, const SpecRequest& r, const CostMeter& cost) {
  auto target_slot = m.target_cache.allocate();
  if (!target_slot) throw SpecdError(ErrorCode::out_of_capacity, "no free target KV slot");
  int32_t draft_slot = -1;
  if (m.draft && r.spec.enabled && r.spec.drafter == DrafterKind::model) {
    auto slot = m.draft_cache->allocate();
    if (!slot) {
      m.target_cache.release(*target_slot);
      throw SpecdError(ErrorCode::out_of_capacity, "no free draft KV slot");
    }
    draft_slot = *slot;
  }
  return std::make_unique<SpecSequence>(r.prompt, *target_slot, draft_slot, r.sampling, r.spec, cost.cost_ratio(),
                                        cost.acceptance.estimate(r.spec.drafter));
}

void release(SpecModels& m, Active& a) {
  if (!a.seq) return;
  m.target_cache.release(a.seq->target_slot);
  if (a.seq->draft_slot >= 0) m.draft_cache->release(a.seq->draft_slot);
  a.seq.reset();
}

// Final bookkeeping of a request that stopped: text, statistics, slots back.
void finish(SpecModels& m, Active& a, SpecResult& res, const Tokenizer* tok) {
  res.stats = a.seq->stats;
  res.decode_seconds = std::chrono::duration<double>(Clock::now() - a.first_token_at).count();
  if (a.stopped_by_string) {
    res.text = a.stop_text;
  } else if (tok) {
    res.text = tok->decode(res.tokens);
  }
  release(m, a);
}

}  // namespace

std::vector<SpecResult> generate_speculative(SpecModels& m, const std::vector<SpecRequest>& requests,
                                             const Tokenizer* tokenizer, CostMeter* meter) {
  for (const auto& r : requests) {
    validate_request(r, static_cast<int32_t>(m.target.config().vocab_size), m.target_cache.max_seq_len(),
                     tokenizer != nullptr);
  }
  torch::InferenceMode inference;
  CostMeter local_meter;
  CostMeter& cost = meter ? *meter : local_meter;
  std::vector<SpecResult> results(requests.size());
  std::vector<Active> active;
  auto cleanup = [&] {
    for (auto& a : active) release(m, a);
  };
  try {
    for (size_t i = 0; i < requests.size(); ++i) {
      active.push_back({i, admit(m, requests[i], cost), std::nullopt, std::nullopt, {}, false, {}});
      if (!requests[i].stop.empty() && tokenizer) {
        active.back().stop.emplace(requests[i].stop);
        active.back().detokenizer.emplace(*tokenizer);
      }
    }
    const auto t0 = Clock::now();
    std::vector<SpecSequence*> prompts;
    for (auto& a : active) prompts.push_back(a.seq.get());
    const auto first = prefill_target(m.target, m.target_cache, prompts);
    const double prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<Active> running;
    for (size_t b = 0; b < active.size(); ++b) {
      Active& a = active[b];
      SpecResult& res = results[a.index];
      res.prefill_seconds = prefill_seconds;
      a.first_token_at = Clock::now();
      if (accept_burst(a, requests[a.index], res, {first[b]})) {
        finish(m, a, res, tokenizer);
      } else {
        running.push_back(std::move(a));
      }
    }
    active = std::move(running);
    while (!active.empty()) {
      std::vector<SpecSequence*> seqs;
      for (auto& a : active) {
        a.seq->max_new_this_round = requests[a.index].max_tokens - static_cast<int32_t>(results[a.index].tokens.size());
        a.seq->adaptive.set_cost_ratio(cost.cost_ratio());
        seqs.push_back(a.seq.get());
      }
      const auto round_start = Clock::now();
      if (cost.rounds) plan_batch(seqs, *cost.rounds, m.target_cache.max_seq_len(), m.draft != nullptr);
      RoundResult round = speculative_round(m, seqs);
      cost.observe(round, std::chrono::duration<double>(Clock::now() - round_start).count(), seqs);
      running.clear();
      for (size_t b = 0; b < active.size(); ++b) {
        Active& a = active[b];
        SpecResult& res = results[a.index];
        bool done = accept_burst(a, requests[a.index], res, round.rows[b].tokens);
        if (!done && static_cast<int64_t>(a.seq->tokens.size()) > m.target_cache.max_seq_len()) {
          res.finish_reason = FinishReason::length;  // the cache is full: no room to feed g
          done = true;
        }
        if (done) {
          finish(m, a, res, tokenizer);
        } else {
          running.push_back(std::move(a));
        }
      }
      active = std::move(running);
    }
  } catch (...) {
    cleanup();
    throw;
  }
  return results;
}

// ---- target-only reference ----

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Releases the slot on every exit path, including exceptions.
struct SlotLease {
  KvCache& cache;
  int32_t slot;
  ~SlotLease() { cache.release(slot); }
};

at::Tensor last_logits(LlamaModel& model, KvCache& cache, int32_t slot, const std::vector<int32_t>& ids) {
  ForwardBatch batch{at::tensor(ids, at::kInt).to(at::kLong).unsqueeze(0), {slot}, {static_cast<int64_t>(ids.size())}};
  return model.forward(batch, cache, LogitsFor::last_position)[0];
}

}  // namespace

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
  auto slot = cache.allocate();
  if (!slot) throw SpecdError(ErrorCode::out_of_capacity, "no free KV cache slot");
  SlotLease lease{cache, *slot};
  torch::InferenceMode inference;
  Rng rng(request.sampling.seed);
  GenerationResult result;
  std::vector<int32_t> context = request.prompt;

  auto t0 = Clock::now();
  at::Tensor logits = last_logits(model, cache, *slot, request.prompt);
  result.prefill_seconds = seconds_since(t0);
  auto t1 = Clock::now();
  while (true) {
    const int32_t token = sample_token(logits, request.sampling, context, rng);
    result.tokens.push_back(token);
    context.push_back(token);
    const bool eos = std::find(request.eos_ids.begin(), request.eos_ids.end(), token) != request.eos_ids.end();
    const bool keep_going = !on_token || on_token(token);
    if (eos || !keep_going) {
      result.finish_reason = FinishReason::stop;
      break;
    }
    if (static_cast<int32_t>(result.tokens.size()) >= request.max_tokens ||
        cache.length(*slot) + 1 > cache.max_seq_len()) {
      result.finish_reason = FinishReason::length;
      break;
    }
    logits = last_logits(model, cache, *slot, {token});
  }
  result.decode_seconds = seconds_since(t1);
  return result;
}

}  // namespace specd
