#pragma once
// Collects trace events (compute-lane busy intervals, scheduler rounds, per-request spans
// and the flows between them) in a bounded ring and writes them as Chrome trace-event
// JSON, which Perfetto UI, chrome://tracing and tools/web/trace.html open
// (docs/trace_format.md). Thread-safe: lanes and actors record from their own threads.
// Bounded: once `capacity` events are held, each new event overwrites the oldest, so an
// always-on recorder keeps the most recent window.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace specd {

// What a viewer shows when an event is selected (the Chrome format's "args"): numbers,
// or words such as a finish reason.
using TraceValue = std::variant<double, std::string>;
using TraceArgs = std::vector<std::pair<std::string, TraceValue>>;

struct TraceEvent {
  std::string name;
  std::string track;       // a lane ("draft lane", "target lane") or "scheduler"; empty for request events
  uint64_t request = 0;    // request events: the request's engine-wide number (its track)
  std::string request_id;  // request events: the id its client gave (the track's name)
  char phase = 'X';        // 'X' complete, 'i' instant, 's'/'f' flow start/end
  double start_us = 0;     // since the recorder was created
  double duration_us = 0;  // 'X' only
  uint64_t id = 0;         // flows: the flow's id
  TraceArgs args;
};

// What to write: the events that end within the last `seconds` (all when unset), and of
// one request only (by the id its client gave) when `request_id` is set.
struct TraceWindow {
  std::optional<double> seconds;
  std::optional<std::string> request_id;
};

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TraceRecorder(bool enabled, size_t capacity = 1'000'000);

  bool enabled() const { return enabled_; }
  // The trace's clock: microseconds since the recorder was created.
  double micros(Clock::time_point t) const;
  // A slice on a lane's or the scheduler's track.
  void complete(std::string name, std::string track, Clock::time_point start, Clock::time_point end,
                TraceArgs args = {});
  // A slice or an instant on a request's own track, named by its id.
  void request_span(uint64_t request, const std::string& request_id, std::string name, Clock::time_point start,
                    Clock::time_point end, TraceArgs args = {});
  void request_instant(uint64_t request, const std::string& request_id, std::string name, Clock::time_point at,
                       TraceArgs args = {});
  // An arrow named `name` from a request's slice (at `from`) to the lane slice that
  // served it (at `to`).
  void flow(std::string name, uint64_t request, const std::string& request_id, Clock::time_point from, std::string lane,
            Clock::time_point to);

  std::vector<TraceEvent> events() const;  // oldest first
  uint64_t dropped() const;                // events overwritten by newer ones
  std::string chrome_json(const TraceWindow& window = {}) const;
  // Throws SpecdError(missing_file) when the file cannot be written.
  void write_chrome_json(const std::filesystem::path& path) const;

 private:
  void add(TraceEvent event);
  void add_locked(TraceEvent event);  // with mutex_ held

  const bool enabled_;
  const size_t capacity_;
  const Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> ring_;  // grows to capacity_, then `next_` wraps over the oldest
  size_t next_ = 0;
  uint64_t dropped_ = 0;
  uint64_t next_flow_ = 1;
};

}  // namespace specd
