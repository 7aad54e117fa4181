#pragma once
// The engine's bounds on every sequence, defined once and passed whole: EngineConfig
// holds them; the request check, the K planner, the scheduler and the KV budget read them.
#include <cstdint>

namespace specd {

struct SequenceLimits {
  // Positions per sequence: prompt plus generated tokens. 0: the models'
  // max_position_embeddings (GGUF context_length), bounded by what the KV budget holds
  // for one request; the engine resolves it at start (Engine::config() has the value)
  // and caps a larger one at the models' positions.
  int64_t max_seq_len = 0;
  int32_t k_max = 8;  // drafted tokens per round, for every request
};

}  // namespace specd
