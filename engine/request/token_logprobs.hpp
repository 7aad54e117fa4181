#pragma once
// Log-probabilities of generated tokens, as OpenAI's `logprobs` reports them: the
// chosen token's and the most likely alternatives' at its position, from the target
// model's own distribution (log-softmax of its logits, before penalties, bias,
// temperature and truncation; vLLM's default), so they are the same with and without
// speculation. Plain values, torch-free: they ride in bursts to the network layer.
#include <cstdint>
#include <string>
#include <vector>

namespace specd {

struct LoggedToken {
  int32_t id = -1;
  float logprob = 0;
  std::string text;  // the token's bytes (filled by RequestOutput, which has the tokenizer)
};

struct TokenLogprobs {
  LoggedToken chosen;
  std::vector<LoggedToken> top;  // the most likely first, as many as the request asked
};

// The most alternatives a request may ask for (OpenAI's bound).
inline constexpr int32_t kMaxTopLogprobs = 20;

}  // namespace specd
