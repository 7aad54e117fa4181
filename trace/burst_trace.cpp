#include "trace/burst_trace.hpp"

#include "trace/trace_recorder.hpp"

namespace specd {

BurstTrace::BurstTrace(std::shared_ptr<TraceRecorder> trace, uint64_t request, std::string request_id, double tokens,
                       Clock::time_point received)
    : trace_(std::move(trace)),
      request_(request),
      request_id_(std::move(request_id)),
      tokens_(tokens),
      received_(received) {}

void BurstTrace::handed() { handed_.store(ticks(Clock::now()), std::memory_order_relaxed); }

void BurstTrace::written() {
  int64_t unset = 0;
  written_.compare_exchange_strong(unset, ticks(Clock::now()), std::memory_order_relaxed);
}

// A zero-length slice at the hand-over: a burst may land inside the next round's span,
// and a zero-length slice always nests; the hand-off and the write are arguments.
BurstTrace::~BurstTrace() {
  TraceArgs args{{"tokens", tokens_}};
  const auto at = [](int64_t t) { return Clock::time_point(Clock::duration(t)); };
  if (const int64_t handed = handed_.load(std::memory_order_relaxed))
    args.emplace_back("handed_after_us", std::chrono::duration<double, std::micro>(at(handed) - received_).count());
  if (const int64_t written = written_.load(std::memory_order_relaxed))
    args.emplace_back("written_us", trace_->micros(at(written)));
  trace_->request_span(request_, request_id_, "burst", received_, received_, std::move(args));
}

}  // namespace specd
