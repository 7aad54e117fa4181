// loadgen: N concurrent streaming clients against a running `specd serve`, each sending
// R requests one after another (or holding a conversation of T turns), over the
// WebSocket /v1/ws or the OpenAI-style SSE routes. With --ramp it runs one level per client count and reports the most
// concurrent streams sustained with no error. Prints one JSON object on stdout;
// progress goes to stderr. Exits 1 when no level ran without errors.
#include <boost/json.hpp>

#include <iostream>

#include "json/json_serialize.hpp"
#include "tools/loadgen/html_report.hpp"
#include "tools/loadgen/level_runner.hpp"
#include "tools/loadgen/loadgen_options.hpp"
#include "tools/loadgen/sse_client.hpp"
#include "tools/loadgen/ws_load_client.hpp"

namespace specd::loadgen {

namespace {

boost::json::object settings_json(const LoadgenOptions& o) {
  const bool ws = o.transport == Transport::ws;
  const std::string base = "://" + o.host + ":" + std::to_string(o.port);
  boost::json::object spec{{"enabled", o.speculative}};
  if (o.speculative) spec["k"] = o.k == "auto" ? boost::json::value("auto") : boost::json::value(std::stoi(o.k));
  boost::json::object s{
      {"url", ws ? "ws" + base + "/v1/ws" : "http" + base + sse_target(o)},
      {"transport", ws ? "ws" : "sse"},
      {"requests_per_client", o.requests_per_client()},
      {"prompt", o.prompt},
      {"chat", o.chat},
      {"max_tokens", o.max_tokens},
      {"temperature", o.temperature},
      {"top_p", o.top_p},
      {"top_k", o.top_k},
      {"speculative", std::move(spec)},
  };
  if (o.seed) s["seed"] = *o.seed;
  if (o.turns > 0) {
    s["turns"] = o.turns;
    s["turn_prompt"] = o.next_turn_prompt();
  }
  return s;
}

int run(const LoadgenOptions& o) {
  const std::vector<int32_t> levels = o.ramp.empty() ? std::vector<int32_t>{o.clients} : o.ramp;
  const ClientCoroutine client =
      o.transport == Transport::ws ? ClientCoroutine(run_ws_client) : ClientCoroutine(run_sse_client);
  std::vector<LevelStats> results;
  for (int32_t clients : levels) {
    LevelStats s = run_level(o, clients, client);
    std::cerr << "loadgen: " << clients << " clients: " << s.streams_ok << "/" << s.requests << " streams, "
              << s.error_count() << " errors, " << s.tokens_per_second() << " tokens/s\n"
              << turns_table(s.turns);
    const bool failed = s.error_count() > 0;
    results.push_back(std::move(s));
    if (failed && !o.keep_going) break;
  }
  boost::json::object report = settings_json(o);
  boost::json::array level_json;
  for (const auto& s : results) level_json.push_back(s.to_json());
  report["levels"] = std::move(level_json);
  const int64_t sustained = max_concurrent_without_errors(results);
  report["max_concurrent_streams_without_errors"] = sustained;
  std::cout << serialize_json(report) << std::endl;
  if (!o.report.empty()) {
    write_html_report(o.report, render_html_report(report, results));
    std::cerr << "loadgen: report written to " << o.report << "\n";
  }
  return sustained > 0 ? 0 : 1;
}

}  // namespace

}  // namespace specd::loadgen

int main(int argc, char** argv) {
  const auto options = specd::loadgen::parse_options(argc, argv);
  try {
    return specd::loadgen::run(options);
  } catch (const std::exception& e) {
    std::cerr << "loadgen: " << e.what() << "\n";
    return 2;
  }
}
