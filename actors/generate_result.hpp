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
#include "engine/request/finish_reason.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd {

// One round's accepted tokens for one request.
struct Burst {
  std::string id;
  std::vector<int32_t> token_ids;  // empty only in a final burst carrying held-back text
  std::string text;                // complete UTF-8 characters only; the rest follows later
  // Draft tokens proposed this round, and how many of them the target accepted. A burst
  // that a stop condition cut inside its drafts counts only the drafts it kept.
  int32_t drafted = 0;
  int32_t accepted = 0;
  // Per token_ids entry, the text that token completed (empty when it ends inside a
  // UTF-8 character). Their concatenation may run ahead of `text`, which holds back what
  // could start a stop string; clients colour tokens with it (draft vs target).
  std::vector<std::string> pieces;
  // Null when nothing waits for the write. A sink that writes the burst to a client
  // calls it once that write completed (the trace's `written_us`); a sink that does not
  // write the burst drops it.
  std::function<void()> on_written;
};

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
  Usage usage;
  SpecStats spec;
  Timings timings;
};

using BurstHandler = std::function<void(const Burst&)>;
using DoneHandler = std::function<void(GenerateResult)>;

}  // namespace specd
