#pragma once
// Trace events as Chrome trace-event JSON (docs/trace_format.md): lanes and the scheduler
// as threads of process 1 ("lanes"), each request as a thread of process 2 ("requests")
// named by its id; flows kept only when both of their ends are.
#include <span>
#include <string>

#include "trace/trace_recorder.hpp"

namespace specd {

// `now_us` is the recorder's clock now, against which `window.seconds` counts back;
// `dropped` goes to otherData.
std::string chrome_trace_json(std::span<const TraceEvent> events, const TraceWindow& window, double now_us,
                              uint64_t dropped);

}  // namespace specd
