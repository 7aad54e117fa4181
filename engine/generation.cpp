#include "engine/generation.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/errors.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_model.hpp"

namespace specd {

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
  ForwardBatch batch{at::tensor(ids, at::kInt).to(at::kLong).unsqueeze(0), {slot},
                     {static_cast<int64_t>(ids.size())}};
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
