#include "engine/speculation/cost_calibration.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/planning/round_cost_model.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

// Row counts where batched kernels change behaviour, up to the limit.
std::vector<int32_t> row_counts(int32_t max_rows) {
  std::vector<int32_t> out;
  for (int32_t r : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}) {
    if (r <= max_rows) out.push_back(r);
  }
  return out;
}

// A deterministic rows x width block of token ids spread over the vocabulary, for the
// timed passes and the contexts they attend over.
at::Tensor synthetic_tokens(const LlamaModel& model, int32_t rows, int32_t width, int64_t seed) {
  const int64_t vocab = model.config().vocab_size;
  return (at::arange(static_cast<int64_t>(rows) * width, at::kLong) * 7 + seed).remainder(vocab).view({rows, width});
}

// Slots 0..filled-1 hold `context` tokens each, so the timed passes attend over a
// context as serving passes do: on empty slots a pass skips the attention and the gather
// of each row's keys and values, and the planner would take wide passes for cheaper than
// they are. Shapes share the slots, so each slot's context is prefilled once, not once
// per shape; the slots are emptied when the calibration ends.
class ContextSlots {
 public:
  ContextSlots(LlamaModel& model, KvCache& cache, int32_t context) : model_(model), cache_(cache), context_(context) {}
  ContextSlots(const ContextSlots&) = delete;
  ContextSlots& operator=(const ContextSlots&) = delete;
  ~ContextSlots() {
    for (int32_t r = 0; r < filled_; ++r) cache_.release(r);
  }

  int32_t context() const { return context_; }

  // Prefills the context into the slots below `rows` that do not hold it yet.
  void hold(int32_t rows) {
    if (rows <= filled_) return;
    if (context_ > 0) {
      ForwardBatch prefix{synthetic_tokens(model_, rows - filled_, context_, 3), {}, {}};
      for (int32_t r = filled_; r < rows; ++r) {
        prefix.slots.push_back(r);
        prefix.lengths.push_back(context_);
      }
      (void)model_.forward(prefix, cache_, LogitsFor::last_position);
    }
    filled_ = rows;
  }

 private:
  LlamaModel& model_;
  KvCache& cache_;
  const int32_t context_;
  int32_t filled_ = 0;
};

// Seconds of four passes of `rows` x `width` tokens on slots 0..rows-1 (which hold the
// context), after one untimed pass; each pass is cut back to the context.
std::vector<double> time_passes(LlamaModel& model, KvCache& cache, int32_t rows, int32_t width, int32_t context,
                                LogitsFor which) {
  ForwardBatch batch{synthetic_tokens(model, rows, width, 1), {}, {}};
  for (int32_t r = 0; r < rows; ++r) {
    batch.slots.push_back(r);
    batch.lengths.push_back(width);
  }
  std::vector<double> seconds;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = Clock::now();
    at::Tensor logits = model.forward(batch, cache, which);
    (void)logits.argmax(-1).sum().item<int64_t>();  // greedy acceptance reads every position
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    for (int32_t r = 0; r < rows; ++r) cache.truncate_to(r, context);
    if (pass > 0) seconds.push_back(elapsed);
  }
  return seconds;
}

// From small to large; a shape whose passes would overrun the budget, judging by the
// largest measured so far, is skipped (the curve extrapolates pessimistically above),
// except one-row shapes: a single request's verify widths are always measured, else a
// large model (a 3B pass takes 170 ms) got no width above 1 within the budget and its
// pessimistic curve turned speculation off.
template <class Observe>
int32_t measure(LlamaModel& model, KvCache& cache, std::vector<std::pair<int32_t, int32_t>> shapes,
                CalibrationLimits limits, LogitsFor which, Observe observe) {
  torch::InferenceMode inference;
  auto tokens = [](const std::pair<int32_t, int32_t>& s) { return s.first * s.second; };
  std::sort(shapes.begin(), shapes.end(), [&](const auto& x, const auto& y) { return tokens(x) < tokens(y); });
  int32_t widest = 0, most_rows = 1;
  for (const auto& shape : shapes) {
    widest = std::max(widest, shape.second);
    most_rows = std::max(most_rows, shape.first);
  }
  // Every row's context and widest pass must fit the KV pool at once (a small
  // kv_cache_memory holds few sequences).
  const int64_t pool_room =
      static_cast<int64_t>(cache.total_blocks() / most_rows) * cache.block_size() - widest - cache.block_size();
  const int64_t context = std::min<int64_t>({limits.context, cache.max_seq_len() - widest, pool_room});
  ContextSlots slots(model, cache, static_cast<int32_t>(std::max<int64_t>(0, context)));
  const auto start = Clock::now();
  double largest_seconds = 0;
  int32_t largest_tokens = 1, measured = 0;
  for (const auto& shape : shapes) {
    const double spent = std::chrono::duration<double>(Clock::now() - start).count();
    const double expected = 5 * largest_seconds * tokens(shape) / largest_tokens;
    if (measured > 0 && shape.first > 1 && spent + expected > limits.budget_seconds) continue;
    slots.hold(shape.first);
    const std::vector<double> passes = time_passes(model, cache, shape.first, shape.second, slots.context(), which);
    for (double seconds : passes) observe(shape.first, shape.second, seconds);
    const double fastest = *std::min_element(passes.begin(), passes.end());
    if (tokens(shape) >= largest_tokens) largest_tokens = tokens(shape), largest_seconds = fastest;
    ++measured;
  }
  return measured;
}

}  // namespace

int32_t calibrate_verify(LlamaModel& target, KvCache& cache, RoundCostModel& out, CalibrationLimits limits) {
  std::vector<std::pair<int32_t, int32_t>> shapes;
  for (int32_t rows : row_counts(std::min(limits.max_rows, cache.slot_count()))) {
    for (int32_t width : {1, 2, 3, 5, 9, 13, 17}) {  // K = 0, 1, 2, 4, 8, 12, 16
      if (width <= limits.k_max + 1 && width <= cache.max_seq_len()) shapes.emplace_back(rows, width);
    }
  }
  return measure(target, cache, std::move(shapes), limits, LogitsFor::all_positions,
                 [&](int32_t rows, int32_t width, double s) { out.observe_verify(rows * width, s); });
}

int32_t calibrate_draft_steps(LlamaModel& draft, KvCache& cache, RoundCostModel& out, CalibrationLimits limits) {
  std::vector<std::pair<int32_t, int32_t>> shapes;
  for (int32_t rows : row_counts(std::min(limits.max_rows, cache.slot_count()))) shapes.emplace_back(rows, 1);
  return measure(draft, cache, std::move(shapes), limits, LogitsFor::last_position,
                 [&](int32_t rows, int32_t, double s) { out.observe_draft_step(rows, s); });
}

}  // namespace specd
