// The gateway's own cost, measured over loopback (BENCHMARKS.md): the engine and the
// gateway in this process, N WebSocket clients (net::WsClient) on the same io threads.
//  - added latency: from the moment a burst is ready in the engine (the gateway's
//    burst hook, on the engine's request strand) to the moment its `tokens` frame is
//    read by the client, per burst; p50/p99/max.
//  - concurrency: N simultaneous streams (one connection each), for each N of
//    --streams; a run passes when every stream ends with `done`, no `error` frame, and
//    usage.completion_tokens equal to the tokens received.
// Prints one JSON object per N.
//
//   specd_gateway_bench [--streams 1,16,64,128,256] [--max-tokens 32] [--io-threads 1]
#include <simdjson.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"
#include "net/gateway.hpp"
#include "net/gateway_config.hpp"
#include "net/ws_client.hpp"

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace specd;

namespace {

// Burst-ready times by (request id, burst index), written by the engine's handlers.
struct ReadyTimes {
  std::mutex mutex;
  std::map<std::pair<std::string, int64_t>, Clock::time_point> at;
};

struct StreamResult {
  bool ok = false;
  std::vector<double> latencies_us;
};

asio::awaitable<StreamResult> run_stream(uint16_t port, std::string id, int max_tokens, ReadyTimes& ready) {
  StreamResult result;
  net::WsClient client(co_await asio::this_coro::executor);
  if (co_await client.connect("127.0.0.1", port)) co_return result;
  std::string message = serialize_json(boost::json::object{{"type", "generate"},
                                                           {"id", id},
                                                           {"prompt", "ROMEO:\n"},
                                                           {"max_tokens", max_tokens},
                                                           {"temperature", 0},
                                                           {"ignore_eos", true}});
  if (co_await client.send_text(std::move(message))) co_return result;
  simdjson::dom::parser parser;
  int64_t bursts = 0, tokens = 0;
  for (;;) {
    net::WsClient::Frame frame = co_await client.read();
    const auto received = Clock::now();
    if (frame.ec) co_return result;
    simdjson::dom::element doc = parser.parse(frame.text);
    const std::string_view type = doc["type"];
    if (type == "tokens") {
      tokens += static_cast<int64_t>(doc["token_ids"].get_array().size());
      std::lock_guard lock(ready.mutex);
      auto it = ready.at.find({id, bursts++});
      if (it != ready.at.end())
        result.latencies_us.push_back(std::chrono::duration<double, std::micro>(received - it->second).count());
    } else {
      result.ok = type == "done" && int64_t(doc["usage"]["completion_tokens"]) == tokens && tokens == max_tokens;
      break;
    }
  }
  co_await client.close();
  co_return result;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

std::vector<int> parse_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    out.push_back(std::atoi(p));
    p = std::strchr(p, ',');
    if (!p) break;
    ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> stream_counts = {1, 16, 64, 128, 256};
  int max_tokens = 32, io_threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--streams"))
      stream_counts = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-tokens"))
      max_tokens = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--io-threads"))
      io_threads = std::atoi(argv[i + 1]);
  }
  net::GatewayConfig config = net::default_gateway_config();
  config.port = 0;
  config.max_connections = 4096;
  config.engine.sequence.max_seq_len = 256;
  config.engine.max_waiting = 4096;
  ReadyTimes ready;
  net::GatewayHooks hooks;
  hooks.on_burst_ready = [&ready](const std::string& id, int64_t index) {
    const auto now = Clock::now();
    std::lock_guard lock(ready.mutex);
    ready.at[{id, index}] = now;
  };
  asio::io_context io(io_threads);
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < io_threads; ++i) threads.emplace_back([&io] { io.run(); });
  Engine engine(io.get_executor(), config.engine);
  auto gateway = std::make_shared<net::Gateway>(io.get_executor(), engine, config, hooks);
  const uint16_t port = gateway->start().port();

  int run = 0;
  for (int n : stream_counts) {
    const auto start = Clock::now();
    std::vector<std::future<StreamResult>> futures;
    for (int i = 0; i < n; ++i) {
      futures.push_back(asio::co_spawn(
          asio::make_strand(io),
          run_stream(port, "b" + std::to_string(run) + "-" + std::to_string(i), max_tokens, ready), asio::use_future));
    }
    std::vector<double> latencies;
    int ok = 0;
    for (auto& f : futures) {
      StreamResult r = f.get();
      ok += r.ok;
      latencies.insert(latencies.end(), r.latencies_us.begin(), r.latencies_us.end());
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const boost::json::object added{{"p50", round_to(percentile(latencies, 0.5), 1)},
                                    {"p99", round_to(percentile(latencies, 0.99), 1)},
                                    {"max", round_to(percentile(latencies, 1.0), 1)}};
    std::puts(serialize_json(boost::json::object{{"streams", n},
                                                 {"ok", ok},
                                                 {"errors", n - ok},
                                                 {"max_tokens", max_tokens},
                                                 {"bursts", latencies.size()},
                                                 {"seconds", round_to(seconds, 3)},
                                                 {"added_latency_us", added}})
                  .c_str());
    std::fflush(stdout);
    ++run;
  }
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await gateway->stop();
        co_await engine.stop(std::chrono::seconds(2));
      },
      asio::use_future)
      .get();
  work.reset();
  for (auto& t : threads) t.join();
  return 0;
}
