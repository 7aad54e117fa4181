#pragma once
// Collects trace events (compute-lane busy intervals, per-request spans) and writes
// them as Chrome trace-event JSON, which Perfetto UI and chrome://tracing open.
// Thread-safe: lanes and actors record from their own threads. Bounded: past
// `max_events` new events are counted as dropped instead of growing without limit.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace specd {

// Numbers a viewer shows when an event is selected (the Chrome format's "args").
using TraceArgs = std::vector<std::pair<std::string, double>>;

struct TraceEvent {
  std::string name;
  std::string track;       // a lane ("draft lane", "target lane") or "requests"
  char phase = 'X';        // 'X' complete event; 'b'/'e' async span begin/end
  double start_us = 0;     // since the recorder was created
  double duration_us = 0;  // 'X' only
  uint64_t id = 0;         // async spans: the request's number
  TraceArgs args;
};

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TraceRecorder(bool enabled, size_t max_events = 1'000'000);

  bool enabled() const { return enabled_; }
  void complete(std::string name, std::string track, Clock::time_point start, Clock::time_point end,
                TraceArgs args = {});
  void async_begin(std::string name, uint64_t id, Clock::time_point at);
  void async_end(std::string name, uint64_t id, Clock::time_point at);

  std::vector<TraceEvent> events() const;
  uint64_t dropped() const;
  // Throws SpecdError(missing_file) when the file cannot be written.
  void write_chrome_json(const std::filesystem::path& path) const;

 private:
  double micros(Clock::time_point t) const;
  void add(TraceEvent event);

  const bool enabled_;
  const size_t max_events_;
  const Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace specd
