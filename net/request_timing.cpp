#include "net/request_timing.hpp"

namespace specd::net {

RequestTiming::RequestTiming(Metrics& metrics, Route route, std::string client_id, const GatewayHooks& hooks,
                             Counted counted)
    : metrics_(metrics), route_(route), client_id_(std::move(client_id)), hooks_(hooks), counted_(counted) {}

void RequestTiming::burst(const Burst& b) {
  const auto now = Clock::now();
  if (hooks_.on_burst_ready) hooks_.on_burst_ready(client_id_, bursts_);
  ++bursts_;
  if (b.token_ids.empty()) return;  // held-back text only
  if (last_burst_) {
    const double per_token =
        std::chrono::duration<double>(now - *last_burst_).count() / static_cast<double>(b.token_ids.size());
    for (size_t i = 0; i < b.token_ids.size(); ++i) metrics_.inter_token(per_token);
  }
  last_burst_ = now;
}

// Time to first token and end to end are the request's own timings (RequestActor
// measures them once, for the result, the trace and these histograms).
void RequestTiming::done(const GenerateResult& r) {
  if (counted_ == Counted::further_choice) return;
  if (r.timings.first_token_ms > 0) metrics_.time_to_first_token(r.timings.first_token_ms / 1000.0);
  if (r.error) {
    metrics_.request_error(route_, r.error->code);
    return;
  }
  metrics_.end_to_end(r.timings.total_ms / 1000.0);
  metrics_.request_finished(route_, r.finish_reason);
}

}  // namespace specd::net
