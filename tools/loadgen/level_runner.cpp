#include "tools/loadgen/level_runner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <exception>
#include <iostream>

namespace specd::loadgen {

void LevelContext::stream_started() {
  ++in_flight;
  peak_in_flight = std::max(peak_in_flight, in_flight);
}

void LevelContext::stream_ended(StreamRecord record) {
  --in_flight;
  records.push_back(std::move(record));
}

void LevelContext::unsent(int64_t count, const std::string& code, int32_t first_turn) {
  for (int64_t i = 0; i < count; ++i) {
    StreamRecord r;
    r.error = code;
    if (first_turn > 0) r.turn = first_turn + static_cast<int32_t>(i);
    records.push_back(std::move(r));
  }
}

LevelStats run_level(const LoadgenOptions& options, int32_t clients, const ClientCoroutine& client) {
  boost::asio::io_context io(1);
  LevelContext ctx{options};
  ctx.closers.resize(static_cast<size_t>(clients));
  boost::asio::steady_timer deadline(
      io, std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s)));
  const auto start = Clock::now();
  auto end = start;
  int32_t running = clients;
  deadline.async_wait([&](boost::system::error_code ec) {
    if (ec) return;  // every client ended first
    ctx.timed_out = true;
    for (auto& close : ctx.closers) {
      if (close) close();
    }
  });
  for (int32_t i = 0; i < clients; ++i) {
    boost::asio::co_spawn(io, client(ctx, i), [&, i](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          std::cerr << "loadgen: client " << i << " failed: " << ex.what() << "\n";
        }
      }
      if (--running == 0) {
        end = Clock::now();
        deadline.cancel();
      }
    });
  }
  io.run();
  const double seconds = std::chrono::duration<double>(end - start).count();
  return summarize(clients, ctx.records, ctx.peak_in_flight, seconds, options.answers);
}

}  // namespace specd::loadgen
