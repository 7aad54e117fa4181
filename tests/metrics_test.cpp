// The gateway's Prometheus registry (net/metrics): cumulative histogram buckets,
// counters by route and reason, and the engine snapshot's gauges and speculative
// counters in the text format.
#include <doctest/doctest.h>

#include "net/metrics.hpp"

using namespace specd;
using namespace specd::net;

TEST_CASE("histogram buckets are cumulative with +Inf, sum and count") {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(7);
  std::string out;
  h.render(out, "x");
  CHECK(out == "x_bucket{le=\"0.1\"} 1\nx_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 4\nx_sum 8.05\nx_count 4\n");
}

TEST_CASE("the exposition has request counters, errors, connection gauges and the engine's series") {
  Metrics m;
  m.request_finished(Route::websocket, FinishReason::length);
  m.request_finished(Route::websocket, FinishReason::length);
  m.request_finished(Route::chat_completions, FinishReason::cancelled);
  m.request_error(Route::websocket, ErrorCode::duplicate_id);
  m.connection_opened(true);
  EngineSnapshot s;
  s.waiting = 3;
  s.running = 2;
  s.target_slots_in_use = 2;
  s.draft_slots_in_use = 1;
  s.slots_total = 32;
  s.kv_blocks_total = 400;
  s.kv_blocks_referenced_target = 100;
  s.kv_blocks_referenced_draft = 7;
  s.prefix_queried_tokens = 900;
  s.prefix_hit_tokens = 640;
  s.preemptions = 2;
  s.drafts = 10;
  s.draft_tokens = 40;
  s.accepted_tokens = 25;
  s.accepted_per_position = {9, 8, 5, 3};
  s.plain_rounds = {{4, 0.5, 4}, {}, {2, 0.25, 6}};
  s.drafting_rounds = {{3, 0.75, 9}};
  const std::string out = m.render(s);
  for (const char* line : {"specd_requests_total{route=\"websocket\",finish_reason=\"length\"} 2\n",
                           "specd_requests_total{route=\"chat_completions\",finish_reason=\"cancelled\"} 1\n",
                           "specd_request_errors_total{route=\"websocket\",code=\"duplicate_id\"} 1\n",
                           "specd_open_connections{protocol=\"websocket\"} 1\n",
                           "specd:num_requests_waiting 3\n",
                           "specd:num_requests_running 2\n",
                           "specd_kv_slots_in_use{model=\"target\"} 2\n",
                           "specd_kv_slots_in_use{model=\"draft\"} 1\n",
                           "specd_kv_slots_total 32\n",
                           "specd_kv_blocks_referenced{model=\"target\"} 100\n",
                           "specd_kv_blocks_referenced{model=\"draft\"} 7\n",
                           "specd:kv_cache_usage_perc 0.25\n",
                           "specd:prefix_cache_queries_total 900\n",
                           "specd:prefix_cache_hits_total 640\n",
                           "specd:num_preemptions_total 2\n",
                           "specd_spec_decode_num_drafts_total 10\n",
                           "specd_spec_decode_num_draft_tokens_total 40\n",
                           "specd_spec_decode_num_accepted_tokens_total 25\n",
                           "specd_spec_decode_num_accepted_tokens_per_pos_total{position=\"3\"} 3\n",
                           "specd_decode_rounds_total{kind=\"plain\"} 6\n",
                           "specd_decode_rounds_total{kind=\"drafting\"} 3\n",
                           "specd_decode_round_seconds_total{kind=\"plain\"} 0.75\n",
                           "specd_decode_round_tokens_total{kind=\"plain\"} 10\n",
                           "specd_decode_round_tokens_total{kind=\"drafting\"} 9\n",
                           "# TYPE specd_e2e_request_latency_seconds histogram\n"}) {
    CAPTURE(line);
    CHECK(out.find(line) != std::string::npos);
  }
  CHECK(m.finished(Route::websocket, FinishReason::length) == 2);
  CHECK(m.errors(ErrorCode::duplicate_id) == 1);
}
