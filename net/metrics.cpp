#include "net/metrics.hpp"

#include <algorithm>
#include <charconv>

namespace specd::net {

namespace {

// Shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string number(double v) {
  char buffer[40];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, ec == std::errc() ? end : buffer);
}

void help(std::string& out, const char* name, const char* type, const char* text) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += text;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += ' ';
  out += number(value);
  out += '\n';
}

std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard lock(mutex_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  std::lock_guard lock(mutex_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    sample(out, name + "_bucket", "le=\"" + le + "\"", static_cast<double>(cumulative));
  }
  sample(out, name + "_sum", "", sum_);
  sample(out, name + "_count", "", static_cast<double>(count_));
}

const char* route_name(Route route) {
  switch (route) {
    case Route::websocket:
      return "websocket";
    case Route::completions:
      return "completions";
    case Route::chat_completions:
      return "chat_completions";
  }
  return "unknown";
}

Metrics::Metrics() : ttft_(latency_bounds()), itl_(latency_bounds()), e2e_(latency_bounds()) {}

void Metrics::request_finished(Route route, FinishReason reason) {
  std::lock_guard lock(mutex_);
  ++finished_[{route, reason}];
}

void Metrics::request_error(Route route, WireCode code) {
  std::lock_guard lock(mutex_);
  ++errors_[{route, code}];
}

uint64_t Metrics::finished(Route route, FinishReason reason) const {
  std::lock_guard lock(mutex_);
  auto it = finished_.find({route, reason});
  return it == finished_.end() ? 0 : it->second;
}

uint64_t Metrics::errors(WireCode code) const {
  std::lock_guard lock(mutex_);
  uint64_t n = 0;
  for (const auto& [key, count] : errors_) n += key.second == code ? count : 0;
  return n;
}

void Metrics::render_gateway(std::string& out) const {
  {
    std::lock_guard lock(mutex_);
    help(out, "specd_requests_total", "counter", "Requests finished, by route and finish reason.");
    for (const auto& [key, n] : finished_) {
      sample(out, "specd_requests_total",
             std::string("route=\"") + route_name(key.first) + "\",finish_reason=\"" + finish_reason_name(key.second) +
                 "\"",
             static_cast<double>(n));
    }
    help(out, "specd_request_errors_total", "counter",
         "Requests and messages refused or failed, by route and error code.");
    for (const auto& [key, n] : errors_) {
      sample(out, "specd_request_errors_total",
             std::string("route=\"") + route_name(key.first) + "\",code=\"" + wire_name(key.second) + "\"",
             static_cast<double>(n));
    }
  }
  help(out, "specd_time_to_first_token_seconds", "histogram", "Submit to the first burst.");
  ttft_.render(out, "specd_time_to_first_token_seconds");
  help(out, "specd_inter_token_latency_seconds", "histogram",
       "Gap between bursts divided by the burst's tokens, once per token.");
  itl_.render(out, "specd_inter_token_latency_seconds");
  help(out, "specd_e2e_request_latency_seconds", "histogram", "Submit to finish.");
  e2e_.render(out, "specd_e2e_request_latency_seconds");
  help(out, "specd_open_connections", "gauge", "Open client connections by protocol.");
  sample(out, "specd_open_connections", "protocol=\"websocket\"", static_cast<double>(ws_connections_.load()));
  sample(out, "specd_open_connections", "protocol=\"http\"", static_cast<double>(http_connections_.load()));
  help(out, "specd_refused_connections_total", "counter", "Connections refused at the connection limit.");
  sample(out, "specd_refused_connections_total", "", static_cast<double>(refused_connections_.load()));
}

std::string Metrics::render(const EngineSnapshot& s) const {
  std::string out;
  render_gateway(out);
  // The gauges and counters routers read, under vLLM's names (the Kubernetes Gateway API
  // inference extension's model-server protocol).
  help(out, "specd:num_requests_waiting", "gauge", "Requests queued for KV slots or blocks (preempted ones included).");
  sample(out, "specd:num_requests_waiting", "", s.waiting);
  help(out, "specd:num_requests_running", "gauge", "Requests prefilling or generating (holding KV slots).");
  sample(out, "specd:num_requests_running", "", s.running);
  help(out, "specd:kv_cache_usage_perc", "gauge",
       "Fraction of the target's KV blocks that sequences hold (1 = full: newcomers wait).");
  sample(out, "specd:kv_cache_usage_perc", "",
         s.kv_blocks_total > 0 ? std::min(1.0, static_cast<double>(s.kv_blocks_referenced_target) / s.kv_blocks_total)
                               : 0.0);
  help(out, "specd:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
  sample(out, "specd:prefix_cache_queries_total", "", static_cast<double>(s.prefix_queried_tokens));
  help(out, "specd:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.");
  sample(out, "specd:prefix_cache_hits_total", "", static_cast<double>(s.prefix_hit_tokens));
  help(out, "specd:num_preemptions_total", "counter", "Requests preempted for KV blocks (resumed later).");
  sample(out, "specd:num_preemptions_total", "", static_cast<double>(s.preemptions));
  help(out, "specd_kv_slots_in_use", "gauge", "KV cache slots in use, by model.");
  sample(out, "specd_kv_slots_in_use", "model=\"target\"", s.target_slots_in_use);
  sample(out, "specd_kv_slots_in_use", "model=\"draft\"", s.draft_slots_in_use);
  help(out, "specd_kv_blocks_referenced", "gauge",
       "KV blocks sequences hold, by model's pool (cached prefix blocks nobody holds not counted).");
  sample(out, "specd_kv_blocks_referenced", "model=\"target\"", s.kv_blocks_referenced_target);
  sample(out, "specd_kv_blocks_referenced", "model=\"draft\"", s.kv_blocks_referenced_draft);
  help(out, "specd_kv_slots_total", "gauge", "KV cache slots per model.");
  sample(out, "specd_kv_slots_total", "", s.slots_total);
  help(out, "specd_engine_rounds_total", "counter", "Scheduler rounds run.");
  sample(out, "specd_engine_rounds_total", "", static_cast<double>(s.rounds));
  help(out, "specd_spec_decode_num_drafts_total", "counter", "Speculative rounds that drafted tokens.");
  sample(out, "specd_spec_decode_num_drafts_total", "", static_cast<double>(s.drafts));
  help(out, "specd_spec_decode_num_draft_tokens_total", "counter", "Draft tokens proposed.");
  sample(out, "specd_spec_decode_num_draft_tokens_total", "", static_cast<double>(s.draft_tokens));
  help(out, "specd_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens the target accepted.");
  sample(out, "specd_spec_decode_num_accepted_tokens_total", "", static_cast<double>(s.accepted_tokens));
  help(out, "specd_spec_decode_num_accepted_tokens_per_pos_total", "counter",
       "Accepted draft tokens by position in the draft (0 first).");
  for (size_t i = 0; i < s.accepted_per_position.size(); ++i) {
    sample(out, "specd_spec_decode_num_accepted_tokens_per_pos_total", "position=\"" + std::to_string(i) + "\"",
           static_cast<double>(s.accepted_per_position[i]));
  }
  help(out, "specd_spec_decode_tree_rounds_total", "counter", "Request rounds whose drafts were a token tree.");
  sample(out, "specd_spec_decode_tree_rounds_total", "", static_cast<double>(s.tree_rounds));
  help(out, "specd_spec_decode_tree_nodes_verified_total", "counter", "Token-tree nodes the target verified.");
  sample(out, "specd_spec_decode_tree_nodes_verified_total", "", static_cast<double>(s.tree_nodes_verified));
  help(out, "specd_spec_decode_tree_nodes_accepted_total", "counter", "Token-tree nodes on accepted paths.");
  sample(out, "specd_spec_decode_tree_nodes_accepted_total", "", static_cast<double>(s.tree_nodes_accepted));
  // Decode rounds summed over batch sizes: tokens per second of drafting rounds against
  // plain ones shows whether speculation pays under the current load.
  RoundTally sums[2];
  for (int drafting = 0; drafting < 2; ++drafting) {
    for (const RoundTally& t : drafting ? s.drafting_rounds : s.plain_rounds) {
      sums[drafting].rounds += t.rounds;
      sums[drafting].seconds += t.seconds;
      sums[drafting].tokens += t.tokens;
    }
  }
  const char* kinds[2] = {"kind=\"plain\"", "kind=\"drafting\""};
  help(out, "specd_decode_rounds_total", "counter", "Rounds that prefilled no newcomer, by whether any row drafted.");
  for (int i = 0; i < 2; ++i) sample(out, "specd_decode_rounds_total", kinds[i], static_cast<double>(sums[i].rounds));
  help(out, "specd_decode_round_seconds_total", "counter", "Wall seconds of those rounds.");
  for (int i = 0; i < 2; ++i) sample(out, "specd_decode_round_seconds_total", kinds[i], sums[i].seconds);
  help(out, "specd_decode_round_tokens_total", "counter", "Tokens those rounds delivered.");
  for (int i = 0; i < 2; ++i)
    sample(out, "specd_decode_round_tokens_total", kinds[i], static_cast<double>(sums[i].tokens));
  return out;
}

}  // namespace specd::net
