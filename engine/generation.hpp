#pragma once
// Target-only autoregressive generation for one request: prefill the prompt through
// the KV cache, then one model step per token. The reference that speculative
// decoding must reproduce exactly (greedy) or in distribution (sampling).
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/finish_reason.hpp"
#include "engine/sampling.hpp"

namespace specd {

class LlamaModel;
class KvCache;

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included if the model wants it
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<int32_t> eos_ids;  // generation stops after emitting one (it is kept in tokens)
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids, not including the prompt
  FinishReason finish_reason = FinishReason::length;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // from the first generated token to the last
};

// Called after each generated token; return false to stop early.
using TokenCallback = std::function<bool(int32_t token)>;

// Runs on a free slot of `cache` and releases it before returning. A prompt that does
// not fit the cache is SpecdError(out_of_capacity); generation that reaches
// max_seq_len ends with finish_reason length.
GenerationResult generate_target_only(LlamaModel& model, KvCache& cache, const GenerationRequest& request,
                                      const TokenCallback& on_token = {});

}  // namespace specd
