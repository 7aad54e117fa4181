#pragma once
// How many KV blocks each model's pool gets. Both pools hold the same sequences, so
// they get the same number of blocks; the byte budget covers both. Configured in bytes
// ([engine] kv_cache_memory), or derived from the memory the process may still use once
// the weights are loaded: half of it, and no more than max_batch sequences of
// max_seq_len (the pool's pages become resident only as blocks are written, but a long
// run writes them all).
#include <cstdint>
#include <string>

#include "engine/request/sequence_limits.hpp"

namespace specd {

struct KvBudgetInput {
  int64_t configured_bytes = 0;  // 0: derive from available_bytes
  int64_t available_bytes = 0;   // memory the process may still use (memory_available_bytes())
  int64_t target_bytes_per_token = 0;
  int64_t draft_bytes_per_token = 0;  // 0: no draft model
  int32_t block_size = 16;
  int32_t max_batch = 1;
  SequenceLimits sequence;
};

struct KvBudget {
  int32_t blocks = 0;  // per model
  int32_t block_size = 16;
  int64_t bytes = 0;     // both pools
  bool derived = false;  // not configured
  int64_t tokens() const { return static_cast<int64_t>(blocks) * block_size; }
};

// Throws SpecdError(bad_value) when the budget cannot hold one request of max_seq_len
// (the message says how much it needs), or for a block size outside [1, 1024].
KvBudget plan_kv_budget(const KvBudgetInput& in);

// Blocks a sequence of `positions` positions occupies.
inline int64_t blocks_for(int64_t positions, int32_t block_size) { return (positions + block_size - 1) / block_size; }

// Bytes this process may still allocate: the smaller of the kernel's MemAvailable and
// what the cgroup (v2 memory.max, v1 limit_in_bytes) leaves above its current use.
int64_t memory_available_bytes();

// The start-up line: "KV cache 4.00 GiB (...): 1820 blocks of 16 tokens per model, ...".
std::string describe(const KvBudget& budget, const KvBudgetInput& in, bool prefix_cache);

}  // namespace specd
