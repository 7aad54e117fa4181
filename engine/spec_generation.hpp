#pragma once
// Generation of a batch of requests with speculative rounds: target prefill of each
// prompt (its logits give the first token), then rounds until every request stops.
// Stop conditions (EOS ids, stop strings, max_tokens) apply to accepted tokens only,
// in order; the rest of a round's burst is dropped. With speculation off for a row,
// its rounds are plain batched target steps, so one driver serves both paths.
#include <cstdint>
#include <string>
#include <optional>
#include <span>
#include <vector>

#include "engine/generation.hpp"
#include "engine/round_cost_model.hpp"
#include "engine/speculative_round.hpp"

namespace specd {

class Tokenizer;

struct SpecRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<int32_t> eos_ids;
  std::vector<std::string> stop;  // stop strings; needs a tokenizer
  SpecSettings spec;
};

struct SpecResult {
  std::vector<int32_t> tokens;  // generated ids (an EOS that stopped generation is kept)
  std::string text;             // decoded text, cut before a stop string (empty without tokenizer)
  FinishReason finish_reason = FinishReason::length;
  SpecStats stats;
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

// Throws SpecdError naming the first bad field: sampling values, empty prompt or stop
// string, max_tokens < 1, negative K, ids outside the vocabulary, a prompt that does not
// fit max_seq_len (out_of_capacity), stop strings without a tokenizer.
void validate_request(const SpecRequest& request, int32_t vocab_size, int64_t max_seq_len, bool has_tokenizer);

// Measured draft-step and verify costs, for adaptive K's cost ratio c and, when
// `rounds` is set (calibrated: cost_calibration.hpp), for the batch K planner.
struct CostMeter {
  std::optional<RoundCostModel> rounds;
  RecentAcceptance acceptance;     // where new requests' acceptance estimates start
  double draft_step_seconds = 0;   // mean batched draft step
  double verify_seconds = 0;       // mean batched target pass
  static constexpr double kUnmeasuredCostRatio = 0.1;  // until the first rounds are measured
  double cost_ratio(double fallback = kUnmeasuredCostRatio) const {
    return draft_step_seconds > 0 && verify_seconds > 0 ? draft_step_seconds / verify_seconds : fallback;
  }
  // Also refits `rounds`; `round_seconds` is the whole round's wall time (0: unknown),
  // from which the per-round overhead outside the two passes is learnt. `batch` is the
  // round's rows in order, for the per-drafter acceptance (empty: not recorded).
  void observe(const RoundResult& round, double round_seconds = 0, std::span<SpecSequence* const> batch = {});
};

// Runs all requests together (continuous batching inside one call: a finished request
// leaves the batch, its slots are released). Throws SpecdError for a request that
// cannot fit (prompt longer than the cache) or when slots run out.
std::vector<SpecResult> generate_speculative(SpecModels& models, const std::vector<SpecRequest>& requests,
                                             const Tokenizer* tokenizer, CostMeter* meter = nullptr);

}  // namespace specd
