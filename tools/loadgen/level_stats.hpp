#pragma once
// Aggregate figures of one load level (N clients x R requests) and of a whole ramp, and
// their JSON report. Built on one thread after the level's streams have ended.
#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/loadgen/stream_record.hpp"

namespace specd::loadgen {

struct Percentiles {
  int64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

// Nearest-rank percentiles (the smallest sample with at least q of the samples at or
// below it); all zero for no samples.
Percentiles percentiles(std::vector<double> samples);

// Three decimals (milliseconds to the microsecond), as the reports print figures.
double round3(double v);

// One turn of a level's conversations (--turns): that turn's request of every client.
struct TurnStats {
  int32_t turn = 0;
  int64_t requests = 0, streams_ok = 0, errors = 0;
  Percentiles ttft_ms;
  // Means over the streams whose usage reported them; -1 when none did.
  double mean_prompt_tokens = -1, mean_cached_tokens = -1;
  boost::json::value to_json() const;
};

struct LevelStats {
  int32_t clients = 0;
  int64_t requests = 0;                   // sent
  int64_t streams_ok = 0;                 // ended with done (stop or length)
  std::map<std::string, int64_t> errors;  // by error code
  std::map<std::string, int64_t> finish_reasons;
  int64_t tokens = 0, drafted = 0, accepted = 0;
  int64_t peak_in_flight = 0;  // most streams open at once, as the clients saw it
  double seconds = 0;          // level wall time, first send to last end
  Percentiles ttft_ms, inter_token_ms, inter_burst_ms, total_ms;
  // The samples behind ttft_ms and inter_token_ms, sorted: the HTML report's CDFs.
  std::vector<double> ttft_sorted_ms, inter_token_sorted_ms;
  std::vector<TurnStats> turns;  // turn 1, 2, ...; empty without --turns
  int64_t retried = 0;           // requests resent after a draining server refused them (WebSocket)
  // --answers: how many successful streams gave each answer text (greedy runs: one entry).
  std::map<std::string, int64_t> answers;

  int64_t error_count() const;
  double tokens_per_second() const { return seconds > 0 ? tokens / seconds : 0; }
  double acceptance_rate() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0; }
  boost::json::value to_json() const;
};

LevelStats summarize(int32_t clients, const std::vector<StreamRecord>& records, int64_t peak_in_flight, double seconds,
                     bool count_answers = false);

// The records of each turn (StreamRecord::turn) summed up; empty when no record has a turn.
std::vector<TurnStats> summarize_turns(const std::vector<StreamRecord>& records);

// The per-turn figures as a small text table (loadgen prints it to stderr), "" without turns.
std::string turns_table(const std::vector<TurnStats>& turns);

// The largest peak of concurrent streams among levels that ended with no error (0 when
// every level had errors).
int64_t max_concurrent_without_errors(const std::vector<LevelStats>& levels);

}  // namespace specd::loadgen
