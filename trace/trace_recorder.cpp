#include "trace/trace_recorder.hpp"

#include <fstream>

#include "engine/base/errors.hpp"
#include "trace/chrome_trace.hpp"

namespace specd {

TraceRecorder::TraceRecorder(bool enabled, size_t capacity)
    : enabled_(enabled), capacity_(std::max<size_t>(capacity, 1)), origin_(Clock::now()) {}

double TraceRecorder::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void TraceRecorder::add(TraceEvent event) {
  std::lock_guard lock(mutex_);
  add_locked(std::move(event));
}

void TraceRecorder::add_locked(TraceEvent event) {
  if (ring_.size() < capacity_) {
    ring_.push_back(std::move(event));
    return;
  }
  ring_[next_] = std::move(event);
  next_ = (next_ + 1) % capacity_;
  ++dropped_;
}

void TraceRecorder::complete(std::string name, std::string track, Clock::time_point start, Clock::time_point end,
                             TraceArgs args) {
  if (!enabled_) return;
  add({std::move(name), std::move(track), 0, {}, 'X', micros(start), micros(end) - micros(start), 0, std::move(args)});
}

void TraceRecorder::request_span(uint64_t request, const std::string& request_id, std::string name,
                                 Clock::time_point start, Clock::time_point end, TraceArgs args) {
  if (!enabled_) return;
  add({std::move(name), {}, request, request_id, 'X', micros(start), micros(end) - micros(start), 0, std::move(args)});
}

void TraceRecorder::request_instant(uint64_t request, const std::string& request_id, std::string name,
                                    Clock::time_point at, TraceArgs args) {
  if (!enabled_) return;
  add({std::move(name), {}, request, request_id, 'i', micros(at), 0, 0, std::move(args)});
}

void TraceRecorder::flow(std::string name, uint64_t request, const std::string& request_id, Clock::time_point from,
                         std::string lane, Clock::time_point to) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  const uint64_t id = next_flow_++;
  add_locked({name, {}, request, request_id, 's', micros(from), 0, id});
  add_locked({std::move(name), std::move(lane), request, request_id, 'f', micros(to), 0, id});
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard lock(mutex_);
  std::vector<TraceEvent> out(ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

uint64_t TraceRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::string TraceRecorder::chrome_json(const TraceWindow& window) const {
  const std::vector<TraceEvent> all = events();
  return chrome_trace_json(all, window, micros(Clock::now()), dropped());
}

void TraceRecorder::write_chrome_json(const std::filesystem::path& path) const {
  std::ofstream file(path);
  if (!file) throw SpecdError(ErrorCode::missing_file, "cannot write trace file " + path.string());
  file << chrome_json();
  if (!file) throw SpecdError(ErrorCode::missing_file, "cannot write trace file " + path.string());
}

}  // namespace specd
