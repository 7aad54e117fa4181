#pragma once
// A request's sampling settings: plain values, torch-free, so that the embedding API
// (actors/engine.hpp) and the network layer can carry them without libtorch headers.
#include <cstdint>
#include <utility>
#include <vector>

namespace specd {

struct SamplingParams {
  double temperature = 0.0;         // 0 means greedy (argmax)
  int32_t top_k = 0;                // 0 keeps every token
  double top_p = 1.0;               // nucleus mass kept, in (0, 1]
  double min_p = 0.0;               // drops tokens below min_p x the most likely one's probability
  double repetition_penalty = 1.0;  // CTRL-style, on tokens already in the context
  // OpenAI's: logit - count x frequency - (count > 0) x presence, count over generated tokens.
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the token's logit (OpenAI: -100..100)
  uint64_t seed = 0;
  // -1: no log-probabilities; 0..kMaxTopLogprobs: each generated token's, with this many
  // alternatives (engine/request/token_logprobs.hpp).
  int32_t logprobs = -1;

  bool greedy() const { return temperature <= 0.0; }
  // True when a token's logit depends on the tokens before it, so that each position of
  // a verify pass needs its own history.
  bool reads_history() const {
    return repetition_penalty != 1.0 || presence_penalty != 0.0 || frequency_penalty != 0.0;
  }
  // True when the logits are changed before the argmax or the draw.
  bool changes_logits() const { return reads_history() || !logit_bias.empty(); }
};

// Throws SpecdError(bad_value) naming the first bad field (engine/request/generate_request.cpp).
void validate(const SamplingParams& params);

}  // namespace specd
