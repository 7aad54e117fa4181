#pragma once
// RequestOutput: the one place that decides a request is finished. It takes each
// round's tokens for one request and cuts them at the first stop condition, in token
// order: a stop string completed by the token's text, an EOS id (kept), max_tokens,
// and a full KV cache. It also turns the kept tokens into streamable text (complete
// UTF-8 characters, holding back what could start a stop string). One per request,
// owned by whoever runs the request's rounds (the scheduler), so the decision is made
// before the burst leaves and a stopped request never runs another round. Not
// thread-safe.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request/burst.hpp"
#include "engine/request/finish_reason.hpp"
#include "engine/request/sequence_limits.hpp"
#include "engine/request/spec_settings.hpp"
#include "engine/request/stop_conditions.hpp"
#include "engine/tokenizer/stream_detokenizer.hpp"

namespace specd {

class Tokenizer;

struct OutputLimits {
  std::vector<int32_t> eos_ids;
  std::vector<std::string> stop;  // needs a tokenizer
  int32_t max_tokens = 128;
  int64_t prompt_tokens = 0;
  int64_t max_seq_len = 0;  // the context may not outgrow the KV cache (the engine's resolved max_seq_len)
};

class RequestOutput {
 public:
  // `tokenizer` may be null (ids only; then `limits.stop` must be empty).
  RequestOutput(const Tokenizer* tokenizer, OutputLimits limits);

  // One round's tokens (accepted drafts, then the target's token) for this request.
  // When a stop condition cuts the burst, drafted and accepted are reduced to the
  // drafts that produced a kept token: a burst cut after m <= accepted tokens reports
  // m drafted and m accepted; the statistics record the same.
  // `logprobs`: one per token when the request asked for them (else empty); those of
  // the kept tokens go into the burst, with the tokens' texts.
  Burst take(std::span<const int32_t> tokens, int32_t drafted, int32_t accepted,
             std::span<const TokenLogprobs> logprobs = {});
  // Set once a stop condition has ended the request.
  std::optional<FinishReason> finished() const { return reason_; }
  // Text held back at the end (an unfinished character, a tail that could have started
  // a stop string); empty after a stop string. Call once, when the request ends.
  std::string flush();
  int32_t generated() const { return generated_; }
  // The speculation statistics of what was kept: the sums of the chunks' counts.
  const SpecStats& stats() const { return stats_; }

 private:
  // Appends one token; returns true when it ends the request.
  bool push(int32_t token, Burst& chunk);
  std::string token_text(int32_t id) const;

  const Tokenizer* tokenizer_;
  OutputLimits limits_;
  std::optional<StreamDetokenizer> detokenizer_;
  std::optional<StopStringMatcher> stop_matcher_;
  std::optional<FinishReason> reason_;
  bool stopped_by_string_ = false;
  int32_t generated_ = 0;
  SpecStats stats_;
};

}  // namespace specd
