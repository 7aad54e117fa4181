#include "trace/chrome_trace.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "json/json_serialize.hpp"

namespace specd {

namespace {

constexpr int64_t kLanesPid = 1;
constexpr int64_t kRequestsPid = 2;

bool is_request_event(const TraceEvent& e) { return e.track.empty(); }
double end_us(const TraceEvent& e) { return e.start_us + e.duration_us; }

// The events a window selects, before pairing: recent enough, and of the one request
// (with the lane slices its flows point into) when a request is asked for.
std::vector<const TraceEvent*> select(std::span<const TraceEvent> events, const TraceWindow& window, double now_us) {
  const double since = window.seconds ? now_us - *window.seconds * 1e6 : -1e300;
  std::vector<const TraceEvent*> out;
  std::multimap<std::string, double> flow_ends;  // lane -> where the request's flows land
  for (const TraceEvent& e : events) {
    if (end_us(e) < since) continue;
    const bool requests_own = is_request_event(e) || e.phase == 'f';
    if (window.request_id && requests_own && e.request_id != *window.request_id) continue;
    if (window.request_id && e.phase == 'f') flow_ends.emplace(e.track, e.start_us);
    out.push_back(&e);
  }
  if (!window.request_id) return out;
  std::erase_if(out, [&](const TraceEvent* e) {
    if (is_request_event(*e) || e->phase != 'X') return false;
    auto [first, last] = flow_ends.equal_range(e->track);
    return std::none_of(first, last, [e](const auto& f) { return f.second >= e->start_us && f.second <= end_us(*e); });
  });
  return out;
}

// Drops flows whose other end fell out of the ring or the window.
void keep_paired(std::vector<const TraceEvent*>& events) {
  std::set<uint64_t> flow_starts, flow_ends;
  for (const TraceEvent* e : events) {
    if (e->phase == 's') flow_starts.insert(e->id);
    if (e->phase == 'f') flow_ends.insert(e->id);
  }
  std::erase_if(events, [&](const TraceEvent* e) {
    if (e->phase == 's') return !flow_ends.contains(e->id);
    if (e->phase == 'f') return !flow_starts.contains(e->id);
    return false;
  });
}

boost::json::object metadata(const char* what, int64_t pid, int64_t tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

boost::json::object to_json(const TraceEvent& e, int64_t pid, int64_t tid) {
  boost::json::object ev{
      {"name", e.name}, {"ph", std::string(1, e.phase)}, {"ts", e.start_us}, {"pid", pid}, {"tid", tid}};
  if (e.phase == 'X') ev["dur"] = e.duration_us;
  if (e.phase == 'i') ev["s"] = "t";
  if (e.phase == 's' || e.phase == 'f') {
    ev["cat"] = e.name;  // "round" or "prefill"
    ev["id"] = e.id;
  }
  if (e.phase == 'f') ev["bp"] = "e";
  if (!e.args.empty()) {
    boost::json::object args;
    for (const auto& [key, value] : e.args) {
      std::visit([&args, &key](const auto& v) { args[key] = v; }, value);
    }
    ev["args"] = std::move(args);
  }
  return ev;
}

}  // namespace

std::string chrome_trace_json(std::span<const TraceEvent> events, const TraceWindow& window, double now_us,
                              uint64_t dropped) {
  std::vector<const TraceEvent*> kept = select(events, window, now_us);
  keep_paired(kept);
  // Lanes are numbered in the order they first recorded, so rows keep their places as the window moves.
  std::map<std::string, int64_t> lane_tids;
  for (const TraceEvent* e : kept) {
    if (!is_request_event(*e)) {
      lane_tids.try_emplace(e->track, static_cast<int64_t>(lane_tids.size()) + 1);
    }
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->start_us < b->start_us; });
  boost::json::array out{metadata("process_name", kLanesPid, 0, "lanes"),
                         metadata("process_name", kRequestsPid, 0, "requests")};
  for (const auto& [lane, tid] : lane_tids) out.push_back(metadata("thread_name", kLanesPid, tid, lane));
  std::map<uint64_t, std::string> request_names;
  boost::json::array body;
  for (const TraceEvent* e : kept) {
    if (is_request_event(*e)) {
      const uint64_t request = e->request;
      auto& name = request_names[request];
      if (name.empty()) name = e->request_id.empty() ? "request " + std::to_string(request) : e->request_id;
      body.push_back(to_json(*e, kRequestsPid, static_cast<int64_t>(request)));
      continue;
    }
    body.push_back(to_json(*e, kLanesPid, lane_tids.at(e->track)));
  }
  for (const auto& [request, name] : request_names) {
    out.push_back(metadata("thread_name", kRequestsPid, static_cast<int64_t>(request), name));
  }
  for (auto& ev : body) out.push_back(std::move(ev));
  boost::json::object other{{"dropped_events", dropped}, {"now_us", now_us}};
  if (window.seconds) other["window_seconds"] = *window.seconds;
  return serialize_json(
      boost::json::object{{"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"}, {"otherData", std::move(other)}});
}

}  // namespace specd
