#pragma once
// What a request gives back: its bursts (one per round) while it runs and its result
// when it ends, and the handlers that receive them. Plain values; part of the embedding
// API (actors/engine.hpp), shared with the request actor that produces them.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/request/burst.hpp"
#include "engine/request/finish_reason.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd {

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // of the prompt tokens, those the prefix cache held
};

struct Timings {
  double queued_ms = 0;          // submit to admission (KV slots granted)
  double first_token_ms = 0;     // submit to the first burst
  double total_ms = 0;           // submit to finish
  double tokens_per_second = 0;  // completion tokens over first token to finish
};

struct RequestError {
  ErrorCode code;
  std::string message;
};

// The one refusal of a request that reaches the engine after stop() began.
inline RequestError engine_stopping() { return {ErrorCode::shutting_down, "the engine is stopping"}; }

struct GenerateResult {
  std::string id;
  FinishReason finish_reason = FinishReason::length;
  std::optional<RequestError> error;  // set when finish_reason is error
  std::vector<int32_t> token_ids;
  std::string text;
  std::vector<TokenLogprobs> logprobs;  // per token_ids entry, when the request asked
  Usage usage;
  SpecStats spec;
  Timings timings;
};

using BurstHandler = std::function<void(const Burst&)>;
using DoneHandler = std::function<void(GenerateResult)>;

}  // namespace specd
