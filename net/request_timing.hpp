#pragma once
// A gateway request's latency bookkeeping (metrics histograms, test hooks).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/engine.hpp"
#include "net/metrics.hpp"
#include "net/protocol.hpp"

namespace specd::net {

// Instrumentation for tests and benchmarks; empty functions cost nothing.
struct GatewayHooks {
  // On the engine's request strand, as soon as a burst is ready and before the gateway
  // formats and queues it: the client's request id and the burst's index (from 0).
  std::function<void(const std::string& client_id, int64_t burst_index)> on_burst_ready;
};

// How a gateway submission counts in the metrics: a request, or a further choice of one
// (n > 1), whose inter-token times count but whose end (finish reason, error, time to
// first token, end to end) is counted by choice 0's.
enum class Counted { request, further_choice };

// One request's latencies. Its methods run in the engine's burst and done handlers,
// one at a time per request (the request's strand).
class RequestTiming {
 public:
  RequestTiming(Metrics& metrics, Route route, std::string client_id, const GatewayHooks& hooks, Counted counted);
  void burst(const Burst& burst);
  void done(const GenerateResult& result);

 private:
  using Clock = std::chrono::steady_clock;
  Metrics& metrics_;
  Route route_;
  std::string client_id_;
  const GatewayHooks& hooks_;
  Counted counted_;
  std::optional<Clock::time_point> last_burst_;
  int64_t bursts_ = 0;
};

}  // namespace specd::net
