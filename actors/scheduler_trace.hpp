#pragma once
// What the scheduler writes to the trace (docs/trace_format.md): each round on the
// scheduler's track with what the batch K planner expected of it, and on each request's
// own track its wait for KV slots, its prefill (with flows to the prefill jobs on both
// lanes) and each round it took part in (with a flow to the verify pass that served it).
// Called on the scheduler's strand; records nothing without an enabled recorder.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "actors/round_lanes.hpp"
#include "engine/planning/batch_k_planner.hpp"

namespace specd {
class TraceRecorder;
struct Burst;
}  // namespace specd

namespace specd::actors {

// A round as the requests' spans and flows need it: when it ran, and where on the lanes.
struct RoundTiming {
  std::chrono::steady_clock::time_point start, end;
  LaneSpan target_prefill, draft_prefill, verify;  // not run where the lane had no such job
};

// What the round did, for the scheduler's track.
struct RoundSummary {
  size_t rows = 0, newcomers = 0, drafting_rows = 0;
  int64_t drafted = 0, accepted = 0;
  int64_t tokens = 0;         // delivered to requests, first tokens included
  int64_t prompt_tokens = 0;  // newcomers' prompt tokens prefilled (chunks)
};

class SchedulerTrace {
 public:
  explicit SchedulerTrace(TraceRecorder* trace);
  bool on() const { return trace_ != nullptr; }

  void queued(uint64_t request, const std::string& id, std::chrono::steady_clock::time_point submitted,
              std::chrono::steady_clock::time_point admitted);
  // What a request's prefill did: its prompt, what the prefix cache held, its chunks.
  struct PrefillCounts {
    int64_t prompt_tokens = 0, cached_tokens = 0, chunks = 0;
  };
  // The round that prefilled the request (its last chunk) and sampled its first token.
  void prefill(uint64_t request, const std::string& id, const RoundTiming& round, const PrefillCounts& counts);
  // A round the request took part in, K planned for it, the nodes of its tree (0: a
  // chain), and the burst it got (its accepted path and the target's token).
  void request_round(uint64_t request, const std::string& id, const RoundTiming& round, int32_t planned_k,
                     int32_t tree_nodes, const Burst& burst);
  // The round on the scheduler's track, from its start to now (its outputs applied).
  void round(const RoundTiming& round, const RoundSummary& summary, const std::optional<BatchPlan>& plan);

 private:
  TraceRecorder* trace_;  // null when off
};

}  // namespace specd::actors
