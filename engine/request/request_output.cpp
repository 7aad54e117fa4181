#include "engine/request/request_output.hpp"

#include <algorithm>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

RequestOutput::RequestOutput(const Tokenizer* tokenizer, OutputLimits limits)
    : tokenizer_(tokenizer), limits_(std::move(limits)) {
  if (tokenizer) detokenizer_.emplace(*tokenizer);
  if (!limits_.stop.empty()) {
    if (!tokenizer) throw SpecdError(ErrorCode::invalid_argument, "stop strings need a tokenizer to match text");
    stop_matcher_.emplace(limits_.stop);
  }
}

Burst RequestOutput::take(std::span<const int32_t> tokens, int32_t drafted, int32_t accepted,
                          std::span<const TokenLogprobs> logprobs) {
  Burst burst;
  if (reason_) return burst;  // nothing follows a stop
  for (int32_t token : tokens) {
    if (push(token, burst)) break;
  }
  const auto kept = static_cast<int32_t>(burst.token_ids.size());
  for (size_t i = 0; i < std::min(logprobs.size(), static_cast<size_t>(kept)); ++i) {
    TokenLogprobs entry = logprobs[i];
    entry.chosen.text = token_text(entry.chosen.id);
    for (LoggedToken& alternative : entry.top) alternative.text = token_text(alternative.id);
    burst.logprobs.push_back(std::move(entry));
  }
  // A cut inside the accepted drafts: the drafts after the cut produced nothing kept.
  if (kept <= accepted && kept < static_cast<int32_t>(tokens.size())) drafted = accepted = kept;
  burst.drafted = drafted;
  burst.accepted = accepted;
  if (drafted > 0) stats_.record(drafted, accepted, kept);
  // No room left in the KV cache to feed the last sampled token.
  if (!reason_ && limits_.prompt_tokens + generated_ > limits_.max_seq_len) reason_ = FinishReason::length;
  return burst;
}

std::string RequestOutput::token_text(int32_t id) const {
  return tokenizer_ ? tokenizer_->id_to_piece(id) : std::string();
}

bool RequestOutput::push(int32_t token, Burst& burst) {
  burst.token_ids.push_back(token);
  generated_ += 1;
  std::string piece = detokenizer_ ? detokenizer_->push(token) : std::string();
  if (stop_matcher_) {
    StopStringMatcher::Result result = stop_matcher_->feed(piece);
    burst.text += result.emit;
    if (result.stopped) {
      stopped_by_string_ = true;
      reason_ = FinishReason::stop;
    }
  } else {
    burst.text += piece;
  }
  burst.pieces.push_back(std::move(piece));
  if (reason_) return true;
  const auto& eos = limits_.eos_ids;
  if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
    reason_ = FinishReason::stop;
  } else if (generated_ >= limits_.max_tokens) {
    reason_ = FinishReason::length;
  }
  return reason_.has_value();
}

std::string RequestOutput::flush() {
  if (stopped_by_string_) return {};
  std::string tail = detokenizer_ ? detokenizer_->flush() : std::string();
  if (stop_matcher_) tail = stop_matcher_->feed(tail).emit + stop_matcher_->finish();
  return tail;
}

}  // namespace specd
