#pragma once
// The engine's bounds on every sequence, defined once and passed whole: EngineConfig
// holds them; the request check, the K planner, the scheduler and the KV budget read them.
#include <cstdint>

namespace specd {

struct SequenceLimits {
  // Positions per sequence: prompt plus generated tokens (capped at the models'
  // max_position_embeddings when the engine starts).
  int64_t max_seq_len = 1024;
  int32_t k_max = 8;  // drafted tokens per round, for every request
};

}  // namespace specd
