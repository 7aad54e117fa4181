#pragma once
// One burst's event on its request's trace track (docs/trace_format.md), recorded when
// the last holder lets go of it. The request actor holds it while the burst handler
// runs, and the burst's `on_written` callback (actors/engine.hpp) holds it too: a sink
// that keeps the callback until its write to the client completed and then calls it
// adds `written_us`; a sink that keeps nothing lets the event be recorded right after
// the handler. A holder keeps the recorder alive, so a frame still queued on a socket
// may outlive the engine.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace specd {

class TraceRecorder;

class BurstTrace {
 public:
  using Clock = std::chrono::steady_clock;

  BurstTrace(std::shared_ptr<TraceRecorder> trace, uint64_t request, std::string request_id, double tokens,
             Clock::time_point received);
  ~BurstTrace();
  BurstTrace(const BurstTrace&) = delete;
  BurstTrace& operator=(const BurstTrace&) = delete;

  // The burst handler returned (it queued the frame for the socket).
  void handed();
  // The write of the burst's frame completed. From any thread; the first call counts.
  void written();

 private:
  static int64_t ticks(Clock::time_point t) { return t.time_since_epoch().count(); }

  std::shared_ptr<TraceRecorder> trace_;
  uint64_t request_;
  std::string request_id_;
  double tokens_;
  Clock::time_point received_;
  std::atomic<int64_t> handed_{0};  // steady_clock ticks; 0 until set
  std::atomic<int64_t> written_{0};
};

}  // namespace specd
