#pragma once
// A request's sampling settings: plain values, torch-free, so that the embedding API
// (actors/engine.hpp) and the network layer can carry them without libtorch headers.
#include <cstdint>

namespace specd {

struct SamplingParams {
  double temperature = 0.0;         // 0 means greedy (argmax)
  int32_t top_k = 0;                // 0 keeps every token
  double top_p = 1.0;               // nucleus mass kept, in (0, 1]
  double repetition_penalty = 1.0;  // CTRL-style, on tokens already in the context
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0.0; }
};

// Throws SpecdError(bad_value) naming the first bad field (engine/request/generate_request.cpp).
void validate(const SamplingParams& params);

}  // namespace specd
