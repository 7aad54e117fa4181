#include "trace/trace_recorder.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

using namespace specd;
using Clock = TraceRecorder::Clock;
using namespace std::chrono_literals;

namespace {

boost::json::array trace_events(const std::string& text) {
  return boost::json::parse(text).as_object().at("traceEvents").as_array();
}

// The events of one phase, in output order.
std::vector<boost::json::object> with_phase(const boost::json::array& events, const char* phase) {
  std::vector<boost::json::object> out;
  for (const auto& e : events) {
    if (e.as_object().at("ph").as_string() == phase) out.push_back(e.as_object());
  }
  return out;
}

std::string thread_name(const boost::json::array& events, int64_t pid, int64_t tid) {
  for (const auto& m : with_phase(events, "M")) {
    if (m.at("name") == "thread_name" && m.at("pid").as_int64() == pid && m.at("tid").as_int64() == tid) {
      return std::string(m.at("args").at("name").as_string());
    }
  }
  return {};
}

}  // namespace

TEST_CASE("a full ring overwrites its oldest events and counts them as dropped") {
  TraceRecorder trace(true, 3);
  const auto t = Clock::now();
  for (int i = 0; i < 5; ++i)
    trace.complete("job" + std::to_string(i), "target lane", t + i * 1ms, t + i * 1ms + 500us);
  const auto events = trace.events();
  REQUIRE(events.size() == 3);
  CHECK(events[0].name == "job2");
  CHECK(events[1].name == "job3");
  CHECK(events[2].name == "job4");
  CHECK(trace.dropped() == 2);
}

TEST_CASE("a disabled recorder records nothing") {
  TraceRecorder trace(false);
  const auto t = Clock::now();
  trace.complete("verify", "target lane", t, t + 1ms);
  trace.request_span(1, "r1", "round", t, t + 1ms);
  trace.flow("round", 1, "r1", t, "target lane", t);
  CHECK(trace.events().empty());
}

TEST_CASE("lanes are threads of process 1, each request a thread of process 2 named by its id, flows paired") {
  TraceRecorder trace(true);
  const auto t = Clock::now();
  trace.complete("verify", "target lane", t + 1ms, t + 3ms, {{"rows", 2.0}});
  trace.complete("draft", "draft lane", t, t + 1ms);
  trace.request_span(7, "chat-7", "round", t, t + 3ms, {{"drafted", 4.0}, {"accepted", 3.0}});
  trace.flow("round", 7, "chat-7", t, "target lane", t + 2ms);
  trace.request_instant(7, "chat-7", "done", t + 4ms, {{"finish_reason", "stop"}, {"completion_tokens", 12.0}});
  const auto events = trace_events(trace.chrome_json());

  CHECK(thread_name(events, 1, 1) == "target lane");
  CHECK(thread_name(events, 1, 2) == "draft lane");
  CHECK(thread_name(events, 2, 7) == "chat-7");
  const auto slices = with_phase(events, "X");
  REQUIRE(slices.size() == 3);
  CHECK(slices[0].at("name") == "draft");  // ordered by start time
  const auto& round = slices[1];
  CHECK(round.at("name") == "round");
  CHECK(round.at("pid").as_int64() == 2);
  CHECK(round.at("tid").as_int64() == 7);
  CHECK(round.at("args").at("accepted").to_number<double>() == 3);
  CHECK(round.at("dur").to_number<double>() == doctest::Approx(3000).epsilon(0.01));
  const auto starts = with_phase(events, "s"), ends = with_phase(events, "f");
  REQUIRE(starts.size() == 1);
  REQUIRE(ends.size() == 1);
  CHECK(starts[0].at("id") == ends[0].at("id"));
  CHECK(starts[0].at("pid").as_int64() == 2);
  CHECK(ends[0].at("pid").as_int64() == 1);
  CHECK(ends[0].at("tid").as_int64() == 1);  // the target lane
  CHECK(ends[0].at("bp") == "e");
  REQUIRE(with_phase(events, "i").size() == 1);
  CHECK(with_phase(events, "i")[0].at("s") == "t");
  CHECK(with_phase(events, "i")[0].at("args").at("finish_reason") == "stop");
  CHECK(with_phase(events, "i")[0].at("args").at("completion_tokens").to_number<double>() == 12);
}

TEST_CASE("a window keeps the events that end within its last seconds") {
  TraceRecorder trace(true);
  const auto now = Clock::now();
  trace.complete("old", "target lane", now - 10s, now - 9s);
  trace.complete("recent", "target lane", now - 2s, now - 1s);
  trace.complete("spanning", "target lane", now - 6s, now - 4s);
  const auto events = trace_events(trace.chrome_json({5.0, {}}));
  const auto slices = with_phase(events, "X");
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].at("name") == "spanning");
  CHECK(slices[1].at("name") == "recent");
  CHECK(boost::json::parse(trace.chrome_json({5.0, {}})).at("otherData").at("window_seconds").to_number<double>() == 5);
}

TEST_CASE("one request's trace holds its own track and the lane work its flows point into") {
  TraceRecorder trace(true);
  const auto t = Clock::now();
  trace.complete("verify", "target lane", t, t + 2ms);
  trace.complete("verify", "target lane", t + 5ms, t + 7ms);
  trace.request_span(1, "a", "round", t, t + 2ms);
  trace.flow("round", 1, "a", t, "target lane", t + 1ms);
  trace.request_span(2, "b", "round", t + 5ms, t + 7ms);
  trace.flow("round", 2, "b", t + 5ms, "target lane", t + 6ms);
  const auto events = trace_events(trace.chrome_json({{}, "b"}));
  const auto slices = with_phase(events, "X");
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].at("pid").as_int64() == 1);
  CHECK(slices[0].at("ts").to_number<double>() ==
        doctest::Approx(slices[1].at("ts").to_number<double>()).epsilon(0.01));
  CHECK(slices[1].at("tid").as_int64() == 2);
  CHECK(with_phase(events, "s").size() == 1);
  CHECK(with_phase(events, "f").size() == 1);
  CHECK(thread_name(events, 2, 1).empty());
}

TEST_CASE("a flow that lost one end to the ring is left out") {
  TraceRecorder trace(true, 2);
  const auto t = Clock::now();
  trace.flow("round", 4, "r4", t, "target lane", t);  // its 's' is overwritten below
  trace.complete("verify", "target lane", t, t + 1ms);
  const auto events = trace_events(trace.chrome_json());
  CHECK(with_phase(events, "s").empty());
  CHECK(with_phase(events, "f").empty());
  CHECK(with_phase(events, "X").size() == 1);
}
