#pragma once
// Runs one load level: N client coroutines on one single-threaded io_context, each
// sending its requests one after another, under a level deadline. LevelContext is the
// level's shared state; it is touched only by coroutines on that io_context's thread.
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/loadgen/level_stats.hpp"
#include "tools/loadgen/loadgen_options.hpp"
#include "tools/loadgen/stream_record.hpp"

namespace specd::loadgen {

struct LevelContext {
  const LoadgenOptions& options;
  std::vector<StreamRecord> records;
  int64_t in_flight = 0, peak_in_flight = 0;
  int64_t next_request = 0;
  bool timed_out = false;
  std::vector<std::function<void()>> closers;  // per client: closes its connection at the deadline

  void stream_started();
  void stream_ended(StreamRecord record);
  // Records `count` requests that could not be sent, all failing with `code`; in a
  // conversation they are turns first_turn, first_turn + 1, ...
  void unsent(int64_t count, const std::string& code, int32_t first_turn = 0);
  int64_t take_request_number() { return next_request++; }
};

// One client: sends its ClientRequests, records each through the context.
using ClientCoroutine = std::function<boost::asio::awaitable<void>(LevelContext&, int32_t client_index)>;

LevelStats run_level(const LoadgenOptions& options, int32_t clients, const ClientCoroutine& client);

}  // namespace specd::loadgen
