#include "gpu/trace_recorder.hpp"

#include <boost/json.hpp>

#include <fstream>
#include <map>

#include "engine/base/errors.hpp"
#include "json/json_serialize.hpp"

namespace specd {

TraceRecorder::TraceRecorder(bool enabled, size_t max_events)
    : enabled_(enabled), max_events_(max_events), origin_(Clock::now()) {}

double TraceRecorder::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void TraceRecorder::add(TraceEvent event) {
  std::lock_guard lock(mutex_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

void TraceRecorder::complete(std::string name, std::string track, Clock::time_point start, Clock::time_point end,
                             TraceArgs args) {
  if (!enabled_) return;
  add({std::move(name), std::move(track), 'X', micros(start), micros(end) - micros(start), 0, std::move(args)});
}

void TraceRecorder::async_begin(std::string name, uint64_t id, Clock::time_point at) {
  if (!enabled_) return;
  add({std::move(name), "requests", 'b', micros(at), 0, id});
}

void TraceRecorder::async_end(std::string name, uint64_t id, Clock::time_point at) {
  if (!enabled_) return;
  add({std::move(name), "requests", 'e', micros(at), 0, id});
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

uint64_t TraceRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void TraceRecorder::write_chrome_json(const std::filesystem::path& path) const {
  const auto events = this->events();
  // Each track becomes a named thread of one process, so a viewer draws one row per lane.
  std::map<std::string, int64_t> tids;
  boost::json::array out;
  for (const auto& e : events) {
    auto [it, inserted] = tids.try_emplace(e.track, static_cast<int64_t>(tids.size()) + 1);
    if (inserted) {
      out.push_back(
          {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", it->second}, {"args", {{"name", e.track}}}});
    }
    boost::json::object ev{
        {"name", e.name}, {"ph", std::string(1, e.phase)}, {"ts", e.start_us}, {"pid", 1}, {"tid", it->second}};
    if (e.phase == 'X') ev["dur"] = e.duration_us;
    if (e.phase == 'b' || e.phase == 'e') {
      ev["cat"] = "request";
      ev["id"] = e.id;
    }
    if (!e.args.empty()) {
      boost::json::object args;
      for (const auto& [key, value] : e.args) args[key] = value;
      ev["args"] = std::move(args);
    }
    out.push_back(std::move(ev));
  }
  std::ofstream file(path);
  if (!file) throw SpecdError(ErrorCode::missing_file, "cannot write trace file " + path.string());
  file << serialize_json(boost::json::object{{"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"}});
  if (!file) throw SpecdError(ErrorCode::missing_file, "cannot write trace file " + path.string());
}

}  // namespace specd
