#include "engine/request/stop_conditions.hpp"

#include <algorithm>
#include <utility>

#include "engine/base/errors.hpp"

namespace specd {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  // An empty stop would match before the first byte and end every request at once.
  for (const auto& stop : stops_) {
    if (stop.empty()) {
      throw SpecdError(ErrorCode::invalid_argument, "stop strings must not be empty");
    }
  }
}

size_t StopStringMatcher::find_stop() const {
  // First byte at which a stop is complete. For one stop the earliest start is also the
  // earliest end, so find() gives each stop's candidate.
  size_t end = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at != std::string::npos) end = std::min(end, at + stop.size());
  }
  if (end == std::string::npos) return end;
  // Among the stops complete at that byte (all end there), the longest starts earliest.
  const std::string_view done(pending_.data(), end);
  size_t longest = 0;
  for (const auto& stop : stops_) {
    if (stop.size() > longest && done.ends_with(stop)) longest = stop.size();
  }
  return end - longest;
}

size_t StopStringMatcher::held_back_length() const {
  const std::string_view text(pending_);
  size_t held = 0;
  for (const auto& stop : stops_) {
    // Only suffixes longer than what is already held can change the answer.
    const size_t longest = std::min(stop.size() - 1, text.size());
    for (size_t len = longest; len > held; --len) {
      if (text.ends_with(std::string_view(stop).substr(0, len))) {
        held = len;
        break;
      }
    }
  }
  return held;
}

StopStringMatcher::Result StopStringMatcher::feed(std::string_view text) {
  if (stopped_) return {"", true};
  pending_.append(text);
  // Stop occurrences can only start inside pending_: anything emitted earlier was not the
  // start of a stop's prefix when it was emitted, so no later text can complete one there.
  if (const size_t at = find_stop(); at != std::string::npos) {
    stopped_ = true;
    pending_.resize(at);
    return {std::exchange(pending_, {}), true};
  }
  const size_t safe = pending_.size() - held_back_length();
  Result out{pending_.substr(0, safe), false};
  pending_.erase(0, safe);
  return out;
}

std::string StopStringMatcher::finish() { return std::exchange(pending_, {}); }

}  // namespace specd
