#pragma once
// The engine's configuration: models, limits, threads, tracing. Plain values; part of the
// embedding API (actors/engine.hpp).
#include <cstdint>
#include <filesystem>

#include "engine/model/weight_format.hpp"
#include "engine/request/sequence_limits.hpp"

namespace specd {

struct EngineConfig {
  std::filesystem::path target_dir;
  std::filesystem::path draft_dir;  // empty: no draft model (prompt-lookup drafting or none)
  // Float checkpoints quantized at load to int8 or int4 blocks (engine/model/weight_format.hpp).
  WeightFormat target_weights = WeightFormat::stored;
  WeightFormat draft_weights = WeightFormat::stored;
  // A Jinja chat template file in place of the target's own (chat_template.jinja,
  // tokenizer_config.json, GGUF metadata); empty: the target's. A file that cannot be
  // read or parsed stops the engine at start.
  std::filesystem::path chat_template;
  int32_t max_batch = 32;   // most requests generating at once (rows of a round)
  SequenceLimits sequence;  // max_seq_len (prompt plus generated tokens) and k_max
  // Bytes of KV blocks for both models together; 0: derived from the memory the process
  // may use after the weights (engine/model/kv_budget.hpp). Printed at start.
  int64_t kv_cache_memory = 0;
  // Bytes of compiled grammars kept for later requests with the same schema or GBNF (an
  // LRU: engine/grammar/grammar_cache.hpp); a grammar larger than the whole budget is
  // refused (bad_value). Printed at start.
  int64_t grammar_cache_memory = int64_t{256} << 20;
  int32_t kv_block_size = 16;  // tokens per KV block; the vector attention kernels need a multiple of 16
  // Full blocks of committed tokens outlive their request, so a prompt that starts the
  // same way (a conversation's next turn) maps them instead of computing them again.
  bool prefix_cache = true;
  int32_t max_waiting = 256;  // admitted-but-waiting bound; beyond it submit fails `overloaded`
  // Most prompt tokens prefilled per round across newcomers, so running streams keep
  // decoding while a long prompt arrives; 0: each prompt whole in one round. The default
  // costs no prefill throughput at 3B size (BENCHMARKS.md, chunked prefill).
  int64_t prefill_chunk = 128;
  // While requests decode, a round that also carries prompt chunks takes at most this
  // times a round without (priced from the measured pass costs: the chunk shrinks, down
  // to a few tokens, as the model grows), so a long prompt arriving stretches running
  // streams' typical inter-token gap by this; 0: chunks are always prefill_chunk. The
  // default's effect on inter-token latency is measured in BENCHMARKS.md.
  double prefill_slowdown = 1.5;
  int32_t burst_queue = 256;  // bursts a request's sink may lag before `slow_consumer`
  // Compute threads across both lanes; 0: what the process may use (its CPU affinity
  // and cgroup quota, compute/thread_policy.hpp). The lane counts, when > 0, override the split.
  int32_t threads = 0;
  int32_t target_threads = 0;        // intra-op threads of the target lane (0: the policy's)
  int32_t draft_threads = 0;         // intra-op threads of the draft lane (0: the policy's)
  bool overlap = true;               // draft lane works on newcomers while the target verifies
  bool trace = false;                // record lane and request spans (trace_json, write_trace)
  int32_t trace_capacity = 100'000;  // events the trace ring holds; the newest overwrite the oldest
  // Seconds each lane spends at start timing passes for the batch K planner; 0 skips
  // calibration (K is then chosen per request from a cost ratio).
  double calibration_seconds = 2.0;
};

}  // namespace specd
