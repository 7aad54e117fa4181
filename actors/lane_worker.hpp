#pragma once
// LaneWorker<Owned>: what a compute lane owns (a model, its KV cache and what the cache
// holds: engine/speculation's Verifier or Drafter) together with the lane that runs
// every job against it. Jobs run one at a time on the lane thread, the only thread that
// touches the state; callers co_await them from their own strands, handing values in
// and getting values back. This is the one lane-worker loop (the lane's own): there is
// no strand or mailbox here that would only forward (STYLE.md, throttling_proxy).
// run() from any coroutine; stop() from any thread but the lane's.
#include <type_traits>
#include <utility>

#include "actors/asio_aliases.hpp"
#include "compute/compute_lane.hpp"

namespace specd::actors {

template <class Owned>
class LaneWorker {
 public:
  LaneWorker(LaneOptions options, TraceRecorder* trace, Owned owned)
      : lane_(std::move(options), trace), owned_(std::move(owned)) {}

  // Runs fn(owned) on the lane and returns its result. `fn` is taken by reference: it
  // must outlive the awaited call (a local of the awaiting coroutine does).
  template <class Fn>
  awaitable<std::invoke_result_t<Fn&, Owned&>> run(const char* label, Fn& fn) {
    auto job = [this, &fn] { return fn(owned_); };
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&, Owned&>>) {
      co_await lane_.run(label, job);
    } else {
      co_return co_await lane_.run(label, job);
    }
  }

  // Start-up work before any actor runs (calibration); blocks the caller.
  template <class Fn>
  std::invoke_result_t<Fn&, Owned&> run_blocking(const char* label, Fn& fn) {
    auto job = [this, &fn] { return fn(owned_); };
    return lane_.run_blocking(label, job);
  }

  // Lets queued jobs finish and joins the lane thread. Idempotent.
  void stop() { lane_.stop(); }

 private:
  ComputeLane lane_;
  Owned owned_;  // touched by the lane thread only, once actors run
};

}  // namespace specd::actors
