// loadgen's own arithmetic: percentiles, per-stream timing from frames and SSE events,
// level aggregation and the "most concurrent streams without errors" figure.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "json/json_serialize.hpp"
#include "tools/loadgen/level_stats.hpp"
#include "tools/loadgen/loadgen_options.hpp"
#include "tools/loadgen/stream_record.hpp"

using namespace specd::loadgen;
using std::chrono::milliseconds;

namespace {

boost::json::object frame(const char* text) { return boost::json::parse(text).as_object(); }

}  // namespace

TEST_CASE("percentiles are nearest-rank over the samples") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  const Percentiles p = percentiles(v);
  CHECK(p.count == 100);
  CHECK(p.p50 == 50);
  CHECK(p.p90 == 90);
  CHECK(p.p99 == 99);
  CHECK(p.max == 100);
  CHECK(p.mean == doctest::Approx(50.5));
  const Percentiles three = percentiles({30, 10, 20});
  CHECK(three.p50 == 20);
  CHECK(three.p99 == 30);
  CHECK(percentiles({}).count == 0);
}

TEST_CASE("WebSocket frames give ttft, per-token gaps, counts and the finish reason") {
  const auto sent = Clock::now();
  StreamTimer t(sent);
  CHECK_FALSE(
      on_ws_frame(t, frame(R"({"type":"tokens","id":"a","text":"x","token_ids":[1,2,3],"drafted":4,"accepted":2})"),
                  sent + milliseconds(40)));
  CHECK_FALSE(on_ws_frame(t,
                          frame(R"({"type":"tokens","id":"a","text":"y","token_ids":[4,5],"drafted":4,"accepted":1})"),
                          sent + milliseconds(60)));
  CHECK(on_ws_frame(t, frame(R"({"type":"done","id":"a","finish_reason":"length","usage":{"completion_tokens":5}})"),
                    sent + milliseconds(70)));
  const StreamRecord& r = t.record();
  CHECK_FALSE(r.error.has_value());
  CHECK(r.finish_reason == "length");
  CHECK(r.ttft_ms == doctest::Approx(40));
  REQUIRE(r.inter_token_ms.size() == 2);  // the second burst's two tokens share its 20 ms gap
  CHECK(r.inter_token_ms[0] == doctest::Approx(10));
  REQUIRE(r.inter_burst_ms.size() == 1);
  CHECK(r.inter_burst_ms[0] == doctest::Approx(20));
  CHECK(r.tokens == 5);
  CHECK(r.bursts == 2);
  CHECK(r.drafted == 8);
  CHECK(r.accepted == 3);
  CHECK(r.completion_tokens == 5);
  CHECK(r.total_ms == doctest::Approx(70));
}

TEST_CASE("an error frame ends the stream with its code") {
  const auto sent = Clock::now();
  StreamTimer t(sent);
  CHECK(on_ws_frame(t, frame(R"({"type":"error","id":"a","code":"overloaded","message":"full"})"), sent));
  CHECK(t.record().error == std::optional<std::string>("overloaded"));
  StreamTimer u(sent);
  CHECK(on_ws_frame(u, frame(R"({"type":"surprise"})"), sent));
  CHECK(u.record().error == std::optional<std::string>("bad_frame"));
}

TEST_CASE("SSE chunks count as bursts and the usage chunk sets the token total") {
  const auto sent = Clock::now();
  StreamTimer t(sent);
  CHECK_FALSE(on_sse_data(t, R"({"object":"text_completion","choices":[{"index":0,"text":"ab","finish_reason":null}]})",
                          sent + milliseconds(30)));
  CHECK_FALSE(on_sse_data(t, R"({"choices":[{"index":0,"delta":{"content":"cd"},"finish_reason":null}]})",
                          sent + milliseconds(50)));
  CHECK_FALSE(
      on_sse_data(t, R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})", sent + milliseconds(51)));
  CHECK_FALSE(
      on_sse_data(t, R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7}})", sent + milliseconds(52)));
  CHECK(on_sse_data(t, "[DONE]", sent + milliseconds(53)));
  const StreamRecord& r = t.record();
  CHECK_FALSE(r.error.has_value());
  CHECK(r.finish_reason == "length");
  CHECK(r.ttft_ms == doctest::Approx(30));
  CHECK(r.bursts == 2);
  CHECK(r.tokens == 7);
  CHECK(r.inter_burst_ms.size() == 1);
  StreamTimer e(sent);
  CHECK(on_sse_data(e, R"({"error":{"message":"no","type":"server_error","code":"overloaded"}})", sent));
  CHECK(e.record().error == std::optional<std::string>("overloaded"));
}

TEST_CASE("WebSocket frames collect the answer text and the usage's prompt and cached tokens") {
  const auto sent = Clock::now();
  StreamTimer t(sent);
  CHECK_FALSE(on_ws_frame(t, frame(R"({"type":"tokens","id":"a","text":"Good ","token_ids":[7,8]})"), sent));
  CHECK_FALSE(on_ws_frame(t, frame(R"({"type":"tokens","id":"a","text":"","token_ids":[9]})"), sent));  // held back
  CHECK_FALSE(on_ws_frame(t, frame(R"({"type":"tokens","id":"a","text":"morrow\n","token_ids":[10]})"), sent));
  CHECK(on_ws_frame(t,
                    frame(R"({"type":"done","id":"a","finish_reason":"stop","usage":{"prompt_tokens":41,)"
                          R"("completion_tokens":4,"total_tokens":45,"prompt_tokens_details":{"cached_tokens":32}}})"),
                    sent));
  const StreamRecord& r = t.record();
  CHECK(r.text == "Good morrow\n");
  CHECK(r.prompt_tokens == 41);
  CHECK(r.cached_tokens == 32);
  CHECK(r.completion_tokens == 4);
  // A server without a prefix cache sends no details: the count stays unknown, not 0.
  StreamTimer u(sent);
  CHECK(on_ws_frame(u, frame(R"({"type":"done","id":"a","finish_reason":"stop","usage":{"prompt_tokens":5}})"), sent));
  CHECK(u.record().prompt_tokens == 5);
  CHECK(u.record().cached_tokens == -1);
  CHECK(u.record().completion_tokens == -1);
}

TEST_CASE("SSE chunks collect completion text and chat deltas, and the usage chunk's cached tokens") {
  const auto sent = Clock::now();
  StreamTimer t(sent);
  CHECK_FALSE(on_sse_data(t, R"({"choices":[{"index":0,"text":"Good ","finish_reason":null}]})", sent));
  CHECK_FALSE(on_sse_data(t, R"({"choices":[{"index":0,"text":"morrow","finish_reason":null}]})", sent));
  CHECK_FALSE(on_sse_data(t, R"({"choices":[{"index":0,"text":"","finish_reason":"stop"}]})", sent));
  CHECK_FALSE(on_sse_data(t,
                          R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14,)"
                          R"("prompt_tokens_details":{"cached_tokens":0}}})",
                          sent));
  CHECK(on_sse_data(t, "[DONE]", sent));
  CHECK(t.record().text == "Good morrow");
  CHECK(t.record().prompt_tokens == 12);
  CHECK(t.record().cached_tokens == 0);
  StreamTimer chat(sent);
  CHECK_FALSE(on_sse_data(
      chat, R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"Ay, "},"finish_reason":null}]})", sent));
  CHECK_FALSE(on_sse_data(chat, R"({"choices":[{"index":0,"delta":{"content":"sir."},"finish_reason":null}]})", sent));
  CHECK_FALSE(on_sse_data(chat, R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", sent));
  CHECK(on_sse_data(chat, "[DONE]", sent));
  CHECK(chat.record().text == "Ay, sir.");
  CHECK(chat.record().bursts == 2);
}

TEST_CASE("a level sums tokens over its wall time and counts errors by code") {
  std::vector<StreamRecord> records(4);
  for (int i = 0; i < 3; ++i) {
    records[i].tokens = 10;
    records[i].drafted = 8;
    records[i].accepted = 6;
    records[i].finish_reason = "length";
    records[i].ttft_ms = 10.0 * (i + 1);
  }
  records[3].error = "overloaded";
  const LevelStats s = summarize(4, records, 3, 2.0);
  CHECK(s.requests == 4);
  CHECK(s.streams_ok == 3);
  CHECK(s.error_count() == 1);
  CHECK(s.errors.at("overloaded") == 1);
  CHECK(s.tokens_per_second() == doctest::Approx(15));
  CHECK(s.acceptance_rate() == doctest::Approx(0.75));
  CHECK(s.ttft_ms.p50 == 20);
  const auto json = s.to_json().as_object();
  CHECK(json.at("errors_by_code").as_object().at("overloaded").as_int64() == 1);
  CHECK(json.at("finish_reasons").as_object().at("length").as_int64() == 3);
  CHECK(json.at("acceptance_rate").as_double() == 0.75);
  CHECK(summarize(1, {StreamRecord{}}, 1, 1.0).to_json().as_object().at("acceptance_rate").is_null());
}

namespace {

StreamRecord turn_record(int32_t turn, double ttft_ms, int64_t prompt_tokens, int64_t cached_tokens) {
  StreamRecord r;
  r.turn = turn;
  r.finish_reason = "stop";
  r.ttft_ms = ttft_ms;
  r.prompt_tokens = prompt_tokens;
  r.cached_tokens = cached_tokens;
  return r;
}

// Two clients' three-turn conversations: client b is refused at turn 2, so its turn 3 is never sent.
std::vector<StreamRecord> two_conversations() {
  StreamRecord refused, unsent;
  refused.turn = 2;
  refused.error = "overloaded";
  unsent.turn = 3;
  unsent.error = "previous_turn_failed";
  return {turn_record(1, 10, 9, 8),   turn_record(1, 30, 10, -1),
          turn_record(2, 20, 30, 16), refused,
          turn_record(3, 40, 50, -1), unsent};
}

}  // namespace

TEST_CASE("per-turn figures: TTFT percentiles, mean prompt and cached tokens over the streams that reported them") {
  const std::vector<TurnStats> turns = summarize_turns(two_conversations());
  REQUIRE(turns.size() == 3);
  CHECK(turns[0].turn == 1);
  CHECK(turns[0].requests == 2);
  CHECK(turns[0].errors == 0);
  CHECK(turns[0].ttft_ms.p50 == 10);
  CHECK(turns[0].ttft_ms.p90 == 30);
  CHECK(turns[0].ttft_ms.mean == 20);
  CHECK(turns[0].mean_prompt_tokens == 9.5);
  CHECK(turns[0].mean_cached_tokens == 8);  // the stream without the count is left out, not taken as 0
  CHECK(turns[1].requests == 2);
  CHECK(turns[1].streams_ok == 1);
  CHECK(turns[1].errors == 1);
  CHECK(turns[1].ttft_ms.count == 1);
  CHECK(turns[2].mean_cached_tokens == -1);
  const auto level = summarize(2, two_conversations(), 2, 1.0).to_json().as_object();
  CHECK(specd::serialize_json(level.at("turns")) ==
        R"([{"turn":1,"requests":2,"streams":2,"errors":0,)"
        R"("ttft_ms":{"count":2,"p50":10,"p90":30,"p99":30,"max":30,"mean":20},)"
        R"("mean_prompt_tokens":9.5,"mean_cached_tokens":8},)"
        R"({"turn":2,"requests":2,"streams":1,"errors":1,)"
        R"("ttft_ms":{"count":1,"p50":20,"p90":20,"p99":20,"max":20,"mean":20},)"
        R"("mean_prompt_tokens":30,"mean_cached_tokens":16},)"
        R"({"turn":3,"requests":2,"streams":1,"errors":1,)"
        R"("ttft_ms":{"count":1,"p50":40,"p90":40,"p99":40,"max":40,"mean":40},)"
        R"("mean_prompt_tokens":50,"mean_cached_tokens":null}])");
  CHECK(level.at("errors").as_int64() == 2);
  // Without --turns the records carry no turn and the level no per-turn array.
  CHECK(summarize_turns({StreamRecord{}}).empty());
  CHECK_FALSE(summarize(1, {StreamRecord{}}, 1, 1.0).to_json().as_object().contains("turns"));
}

TEST_CASE("the per-turn text table") {
  CHECK(turns_table(summarize_turns(two_conversations())) ==
        "turn requests errors  TTFT p50 ms     p90 ms     max ms    mean ms prompt tokens cached tokens\n"
        "   1        2      0         10.0       30.0       30.0       20.0           9.5           8.0\n"
        "   2        2      1         20.0       20.0       20.0       20.0          30.0          16.0\n"
        "   3        2      1         40.0       40.0       40.0       40.0          50.0             -\n");
  CHECK(turns_table({}).empty());
}

TEST_CASE("the sustained concurrency is the peak of the largest error-free level") {
  LevelStats clean8, clean16, failed32;
  clean8.requests = clean8.streams_ok = 16;
  clean8.peak_in_flight = 8;
  clean16.requests = clean16.streams_ok = 32;
  clean16.peak_in_flight = 16;
  failed32.requests = 64;
  failed32.streams_ok = 60;
  failed32.errors["overloaded"] = 4;
  failed32.peak_in_flight = 32;
  CHECK(max_concurrent_without_errors({clean8, clean16, failed32}) == 16);
  CHECK(max_concurrent_without_errors({failed32}) == 0);
}

TEST_CASE("requests carry the sampling and speculation settings") {
  LoadgenOptions o;
  o.prompt = "Hi";
  o.max_tokens = 7;
  o.seed = 10;
  o.k = "auto";
  o.temperature = 0.7;
  const std::string ws_text = request_json(o, "r3", 2);
  CHECK(ws_text.find("\"temperature\":0.7,") != std::string::npos);  // plain, not 7E-1
  const auto ws = boost::json::parse(ws_text).as_object();
  CHECK(ws.at("type").as_string() == "generate");
  CHECK(ws.at("id").as_string() == "r3");
  CHECK(ws.at("prompt").as_string() == "Hi");
  CHECK(ws.at("max_tokens").as_int64() == 7);
  CHECK(ws.at("seed").to_number<uint64_t>() == 12);
  CHECK(ws.at("speculative").as_object().at("k").as_string() == "auto");
  CHECK_FALSE(ws.contains("ignore_eos"));  // the server's default: stop at EOS
  o.transport = Transport::sse;
  o.chat = true;
  o.speculative = false;
  o.ignore_eos = true;
  const auto sse = boost::json::parse(request_json(o, "", 0)).as_object();
  CHECK(sse.at("ignore_eos").as_bool());
  CHECK(sse.at("stream").as_bool());
  CHECK_FALSE(sse.contains("type"));
  CHECK(sse.at("messages").as_array().at(0).as_object().at("content").as_string() == "Hi");
  CHECK_FALSE(sse.at("speculative").as_object().at("enabled").as_bool());
  CHECK(sse_target(o) == "/v1/chat/completions");
}

TEST_CASE("--answers counts the successful streams per answer text; resent requests are counted as retried") {
  std::vector<StreamRecord> records(4);
  records[0].text = records[1].text = "Ay, sir.";
  records[2].text = "No.";
  records[2].retries = 2;
  records[3].error = "disconnected";
  records[3].text = "Ay";
  const auto json = summarize(4, records, 2, 1.0, true).to_json().as_object();
  const auto& answers = json.at("answers").as_object();
  CHECK(answers.size() == 2);
  CHECK(answers.at("Ay, sir.").as_int64() == 2);
  CHECK(answers.at("No.").as_int64() == 1);
  CHECK(json.at("retried").as_int64() == 1);
  CHECK_FALSE(summarize(4, records, 2, 1.0).to_json().as_object().contains("answers"));
}
