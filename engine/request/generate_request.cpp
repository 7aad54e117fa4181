#include "engine/request/generate_request.hpp"

#include "engine/request/token_logprobs.hpp"

#include <cmath>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

[[noreturn]] void refuse(const std::string& what) { throw SpecdError(ErrorCode::bad_value, what); }

void validate_input(const GenerateRequest& r, std::span<const int32_t> ids, const RequestLimits& limits) {
  const int inputs = !r.prompt.empty() + !r.messages.empty() + !r.prompt_ids.empty();
  if (inputs == 0) refuse("the prompt is empty");
  if (inputs > 1) refuse("give one of prompt, messages or prompt ids");
  if (ids.empty()) refuse("the prompt has no tokens");
  for (int32_t id : ids) {
    if (id < 0 || id >= limits.vocab_size) refuse("prompt id " + std::to_string(id) + " outside the vocabulary");
  }
  if (static_cast<int64_t>(ids.size()) >= limits.sequence.max_seq_len) {
    throw SpecdError(ErrorCode::out_of_capacity, "prompt of " + std::to_string(ids.size()) +
                                                     " tokens does not fit max_seq_len " +
                                                     std::to_string(limits.sequence.max_seq_len));
  }
}

void validate_spec(const SpecSettings& spec, const RequestLimits& limits) {
  if (!spec.enabled) return;
  const std::string bound = "[0, " + std::to_string(limits.sequence.k_max) + "]";
  if (spec.k < 0 || spec.k > limits.sequence.k_max) refuse("speculative.k must be in " + bound);
  if (spec.adaptive && (spec.k_max < 0 || spec.k_max > limits.sequence.k_max))
    refuse("the bound of K = auto must be in " + bound);
  if (spec.tree.mode == TreeMode::fixed && static_cast<int32_t>(spec.tree.widths.size()) > limits.sequence.k_max)
    refuse("speculative.tree is deeper than the engine's k_max " + std::to_string(limits.sequence.k_max));
}

}  // namespace

void validate(const SamplingParams& p) {
  if (!(p.temperature >= 0 && p.temperature <= 100)) refuse("temperature must be in [0, 100]");
  if (p.top_k < 0) refuse("top_k must be >= 0 (0 disables it)");
  if (!(p.top_p > 0 && p.top_p <= 1)) refuse("top_p must be in (0, 1]");
  if (!(p.min_p >= 0 && p.min_p <= 1)) refuse("min_p must be in [0, 1]");
  if (p.logprobs < -1 || p.logprobs > kMaxTopLogprobs)
    refuse("top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  if (!(p.repetition_penalty > 0 && p.repetition_penalty <= 100)) refuse("repetition_penalty must be in (0, 100]");
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2)) refuse("presence_penalty must be in [-2, 2]");
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2)) refuse("frequency_penalty must be in [-2, 2]");
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0) refuse("logit_bias: token " + std::to_string(id) + " is not a token id");
    if (!(bias >= -100 && bias <= 100))
      refuse("logit_bias: the bias of token " + std::to_string(id) + " must be in [-100, 100]");
  }
}

void validate_request(const GenerateRequest& r, std::span<const int32_t> prompt_ids, const RequestLimits& limits) {
  validate(r.sampling);
  for (const auto& entry : r.sampling.logit_bias) {
    if (entry.first >= limits.vocab_size)
      refuse("logit_bias: token " + std::to_string(entry.first) + " outside the vocabulary");
  }
  if (r.max_tokens < 1) refuse("max_tokens must be >= 1");
  for (const auto& s : r.stop) {
    if (s.empty()) refuse("a stop string is empty");
  }
  validate_spec(r.spec, limits);
  validate_input(r, prompt_ids, limits);
}

}  // namespace specd
