// gateway_soak: a long mixed load against a live `specd serve`, then the checks that
// it left nothing behind. Clients (tests/soak/soak_clients.hpp) run until --seconds are
// up; the server's RSS is sampled meanwhile; then GET /metrics must show every KV slot
// free, no KV block held in either model's pool (prefix blocks stay cached, unreferenced)
// and no request running or waiting. Run through tests/support/with_server.sh,
// which gives SPECD_PORT, SPECD_TOKEN and SPECD_SERVER_PID:
//
//   bash tests/support/with_server.sh build/specd --io-threads 4 -- \
//     build/tests/gateway_soak --seconds 600 --clients 64
//
// Prints one JSON object; exits 0 only with no error, every slot free and the RSS at
// the end within --rss-growth (a fraction) of its value after the first quarter (the
// warm-up: allocator pools and caches reach their working size).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "json/json_serialize.hpp"
#include "tests/soak/soak_clients.hpp"

namespace specd::soak {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct Args {
  SoakOptions options;
  int server_pid = 0;
  double rss_growth = 0.10;
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (const char* p = std::getenv("SPECD_PORT")) a.options.port = static_cast<uint16_t>(std::atoi(p));
  if (const char* t = std::getenv("SPECD_TOKEN")) a.options.token = t;
  if (const char* pid = std::getenv("SPECD_SERVER_PID")) a.server_pid = std::atoi(pid);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--seconds")
      a.options.seconds = std::atof(v);
    else if (flag == "--clients")
      a.options.clients = std::atoi(v);
    else if (flag == "--sse-every")
      a.options.sse_every = std::atoi(v);
    else if (flag == "--cancel")
      a.options.cancel = std::atof(v);
    else if (flag == "--disconnect")
      a.options.disconnect = std::atof(v);
    else if (flag == "--max-tokens")
      a.options.max_tokens = std::atoi(v);
    else if (flag == "--seed")
      a.options.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--rss-growth")
      a.rss_growth = std::atof(v);
    else if (flag == "--port")
      a.options.port = static_cast<uint16_t>(std::atoi(v));
    else if (flag == "--server-pid")
      a.server_pid = std::atoi(v);
    else
      throw std::runtime_error("unknown option " + flag);
  }
  if (a.options.port == 0) throw std::runtime_error("no port: set SPECD_PORT or --port");
  return a;
}

// VmRSS of `pid` in KiB; -1 when unknown.
int64_t rss_kib(int pid) {
  if (pid <= 0) return -1;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

struct RssSample {
  double seconds;
  int64_t kib;
};

// Samples the server's RSS every tenth of the run until the clients stop.
asio::awaitable<void> sample_rss(SoakContext& ctx, int pid, std::vector<RssSample>& out) {
  const auto start = Clock::now();
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto step =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ctx.options.seconds / 10));
  for (auto next = start; !ctx.over(); next += step) {
    const double at = std::chrono::duration<double>(Clock::now() - start).count();
    out.push_back({at, rss_kib(pid)});
    std::fprintf(stderr, "gateway_soak: %.0f s: rss %lld KiB, ws %lld requests, sse %lld, errors %lld\n", at,
                 static_cast<long long>(out.back().kib), static_cast<long long>(ctx.ws.requests),
                 static_cast<long long>(ctx.sse.requests),
                 static_cast<long long>(ctx.ws.error_count() + ctx.sse.error_count()));
    timer.expires_at(std::min(next + step, ctx.end));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

// GET /metrics: the value of each sample line ("name{labels} value").
asio::awaitable<std::map<std::string, double>> fetch_metrics(const SoakOptions& o) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  co_await stream.async_connect(asio::ip::tcp::endpoint(asio::ip::make_address(o.host), o.port), asio::use_awaitable);
  http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
  req.set(http::field::host, o.host);
  if (!o.token.empty()) req.set(http::field::authorization, "Bearer " + o.token);
  co_await http::async_write(stream, req, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  co_await http::async_read(stream, buffer, res, asio::use_awaitable);
  std::map<std::string, double> values;
  std::istringstream lines(res.body());
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    values[line.substr(0, space)] = std::atof(line.c_str() + space + 1);
  }
  co_return values;
}

const char* const kLeftovers[] = {"specd_kv_slots_in_use{model=\"target\"}",
                                  "specd_kv_slots_in_use{model=\"draft\"}",
                                  "specd_kv_blocks_referenced{model=\"target\"}",
                                  "specd_kv_blocks_referenced{model=\"draft\"}",
                                  "specd:num_requests_running",
                                  "specd:num_requests_waiting"};

// What /metrics shows in use after the clients ended, and how many reads it took to
// see nothing in use (1: at once; a client's disconnect may still be on its way).
struct Leftovers {
  std::map<std::string, double> values;
  int reads = 0;
};

// Polls /metrics for up to 10 s until nothing is left in use; the last values read.
asio::awaitable<Leftovers> leftovers(const SoakOptions& o) {
  Leftovers left;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto values = co_await fetch_metrics(o);
    left.reads += 1;
    double sum = 0;
    for (const char* name : kLeftovers) {
      auto it = values.find(name);
      left.values[name] = it == values.end() ? -1 : it->second;
      sum += it == values.end() ? 1 : it->second;
    }
    if (sum == 0) break;
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return left;
}

boost::json::object tally_json(const Tally& t) {
  boost::json::object errors;
  for (const auto& [code, n] : t.errors) errors[code] = n;
  return {{"requests", t.requests},     {"completed", t.completed},
          {"cancelled", t.cancelled},   {"cancel_crossed_done", t.cancel_crossed},
          {"dropped", t.disconnected},  {"tokens", t.tokens},
          {"errors", std::move(errors)}};
}

int report(const Args& a, const SoakContext& ctx, const std::vector<RssSample>& rss, const Leftovers& left) {
  const int64_t errors = ctx.ws.error_count() + ctx.sse.error_count();
  bool slots_free = true;
  boost::json::object left_json;
  for (const auto& [name, v] : left.values) {
    left_json[name] = v;
    slots_free = slots_free && v == 0;
  }
  int64_t baseline = -1;  // the first sample after the warm-up quarter
  for (const auto& s : rss) {
    if (baseline < 0 && s.seconds >= a.options.seconds / 4) baseline = s.kib;
  }
  const int64_t end = rss.empty() ? -1 : rss.back().kib;
  const double growth = baseline > 0 ? static_cast<double>(end - baseline) / static_cast<double>(baseline) : 0;
  boost::json::array samples;
  for (const auto& s : rss) samples.push_back(boost::json::array{s.seconds, s.kib});
  const bool flat = a.server_pid <= 0 || growth <= a.rss_growth;
  boost::json::object out{{"seconds", a.options.seconds},
                          {"clients", a.options.clients},
                          {"websocket", tally_json(ctx.ws)},
                          {"sse", tally_json(ctx.sse)},
                          {"errors", errors},
                          {"left_in_use", std::move(left_json)},
                          {"metrics_reads_until_free", left.reads},
                          {"rss_kib_samples", std::move(samples)},
                          {"rss_baseline_kib", baseline},
                          {"rss_end_kib", end},
                          {"rss_growth", growth},
                          {"ok", errors == 0 && slots_free && flat}};
  std::cout << serialize_json(out) << std::endl;
  return errors == 0 && slots_free && flat && ctx.ws.requests + ctx.sse.requests > 0 ? 0 : 1;
}

int run(const Args& a) {
  asio::io_context io(1);
  const auto seconds = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.options.seconds));
  SoakContext ctx{a.options, Clock::now() + seconds, {}, {}, std::mt19937_64(a.options.seed)};
  std::vector<RssSample> rss;
  auto rethrow = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  };
  for (int32_t i = 0; i < a.options.clients; ++i) {
    const bool sse = a.options.sse_every > 0 && i % a.options.sse_every == a.options.sse_every - 1;
    if (sse)
      asio::co_spawn(io, run_sse_client(ctx), rethrow);
    else
      asio::co_spawn(io, run_ws_client(ctx, i), rethrow);
  }
  asio::co_spawn(io, sample_rss(ctx, a.server_pid, rss), rethrow);
  io.run();
  Leftovers left;
  io.restart();
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { left = co_await leftovers(a.options); }, rethrow);
  io.run();
  rss.push_back({std::chrono::duration<double>(Clock::now() - (ctx.end - seconds)).count(), rss_kib(a.server_pid)});
  return report(a, ctx, rss, left);
}

}  // namespace

}  // namespace specd::soak

int main(int argc, char** argv) {
  try {
    return specd::soak::run(specd::soak::parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "gateway_soak: " << e.what() << "\n";
    return 2;
  }
}
