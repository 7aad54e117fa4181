#pragma once
// The soak's clients against a live `specd serve`: WebSocket clients that run request
// after request on one connection and SSE clients that POST /v1/completions with
// stream:true, each request given a fate: read to its end, cancelled after a few frames
// (WebSocket `cancel`), or dropped by closing the socket mid-stream (SSE has no cancel:
// a drop is its cancel). Every stream that ends is checked: no error frame or event,
// usage.completion_tokens equal to the tokens received, a cancelled finish only after
// a cancel. All clients run on one single-threaded io_context; the tallies need no lock.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace specd::soak {

using Clock = std::chrono::steady_clock;

struct SoakOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string token;
  int32_t clients = 64;
  int32_t sse_every = 4;     // every sse_every-th client speaks SSE, the others WebSocket
  double cancel = 0.10;      // fraction of requests cancelled mid-stream
  double disconnect = 0.10;  // fraction whose connection is dropped mid-stream
  int32_t max_tokens = 48;   // each request asks for 1..max_tokens
  double seconds = 600;
  uint64_t seed = 1;
};

enum class Fate { finish, cancel, disconnect };

// What one request will do: its fate, after how many frames (or events) it strikes.
struct Plan {
  Fate fate = Fate::finish;
  int32_t after = 0;
  int32_t max_tokens = 1;
  int64_t number = 0;
};

struct Tally {
  int64_t requests = 0, completed = 0, cancelled = 0, disconnected = 0, tokens = 0;
  int64_t cancel_crossed = 0;  // cancel sent, but the request had already finished
  std::map<std::string, int64_t> errors;
  void error(const std::string& code) { ++errors[code]; }
  int64_t error_count() const;
};

struct SoakContext {
  const SoakOptions& options;
  Clock::time_point end;
  Tally ws, sse;
  std::mt19937_64 rng;
  int64_t next_number = 0;

  bool over() const { return Clock::now() >= end; }
  Plan plan();
};

boost::asio::awaitable<void> run_ws_client(SoakContext& ctx, int32_t index);
boost::asio::awaitable<void> run_sse_client(SoakContext& ctx);

}  // namespace specd::soak
