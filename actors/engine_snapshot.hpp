#pragma once
// The engine's counters and gauges (metrics, tests), as the scheduler reports them.
#include <cstdint>
#include <vector>

namespace specd {

// Decode rounds (rounds that prefilled no newcomer) of one batch size: how many, their
// wall seconds and the tokens they delivered.
struct RoundTally {
  int64_t rounds = 0;
  double seconds = 0;
  int64_t tokens = 0;
};

// Counters and gauges for metrics and tests.
struct EngineSnapshot {
  int32_t waiting = 0, running = 0;
  int32_t target_slots_in_use = 0, draft_slots_in_use = 0, slots_total = 0;
  int64_t live_requests = 0;  // request actors alive (finished ones included until freed)
  // KV blocks per model's pool.
  int32_t kv_blocks_total = 0;
  // Blocks each pool has out to some sequence, read from the ledgers themselves (a shared
  // block once; cached blocks nobody holds are not counted): all back to 0 when idle.
  int32_t kv_blocks_referenced_target = 0, kv_blocks_referenced_draft = 0;
  int64_t prefix_queried_tokens = 0, prefix_hit_tokens = 0;  // prompts' tokens, and those found cached
  int64_t preemptions = 0;
  int64_t requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  int64_t rounds = 0;
  int64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;  // vLLM's speculative counters
  std::vector<int64_t> accepted_per_position;
  // Token trees: rounds whose row verified a tree, its nodes, and those on accepted paths.
  int64_t tree_rounds = 0, tree_nodes_verified = 0, tree_nodes_accepted = 0;
  double cost_ratio = 0;  // measured draft step / verify pass
  // Indexed by rows - 1: rounds in which no row drafted, and rounds in which some did.
  // Their tokens per second at equal rows, measured side by side, say whether
  // speculation paid in the rounds that used it, free of the drift between runs.
  std::vector<RoundTally> plain_rounds, drafting_rounds;
};

}  // namespace specd
