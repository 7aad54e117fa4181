#pragma once
// The gateway's Prometheus registry: request counters by route and outcome, error
// counters by code, latency histograms (time to first token, inter-token, end to end),
// connection gauges; rendered in the Prometheus text format together with the
// engine's gauges and speculative counters. Thread-safe: sessions and engine handlers
// record from any thread.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends the _bucket, _sum and _count lines of `name`.
  void render(std::string& out, const std::string& name) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bound, plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

enum class Route { websocket, completions, chat_completions };
const char* route_name(Route route);

class Metrics {
 public:
  Metrics();

  void request_finished(Route route, FinishReason reason);
  void request_error(Route route, WireCode code);  // refused or failed, by code
  void time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void inter_token(double seconds) { itl_.observe(seconds); }
  void end_to_end(double seconds) { e2e_.observe(seconds); }
  void connection_opened(bool websocket) { (websocket ? ws_connections_ : http_connections_) += 1; }
  void connection_closed(bool websocket) { (websocket ? ws_connections_ : http_connections_) -= 1; }
  void connection_refused() { refused_connections_ += 1; }

  // The whole exposition: the gateway's series and the engine's snapshot.
  std::string render(const EngineSnapshot& engine) const;

  const Histogram& ttft() const { return ttft_; }
  uint64_t finished(Route route, FinishReason reason) const;
  uint64_t errors(WireCode code) const;

 private:
  void render_gateway(std::string& out) const;

  mutable std::mutex mutex_;
  std::map<std::pair<Route, FinishReason>, uint64_t> finished_;
  std::map<std::pair<Route, WireCode>, uint64_t> errors_;
  Histogram ttft_, itl_, e2e_;
  std::atomic<int64_t> ws_connections_{0}, http_connections_{0}, refused_connections_{0};
};

}  // namespace specd::net
