#pragma once
// A progress bar on stderr for loading or writing large checkpoints. Silent below a
// size threshold (so tests and tiny models stay quiet); above it, a redrawn bar when
// stderr is a terminal, else one line per quarter (readable in logs).
// Not thread-safe: the loading thread owns it.
#include <chrono>
#include <cstdint>
#include <string>

namespace specd {

class LoadProgress {
 public:
  static constexpr uint64_t kDefaultThreshold = uint64_t(256) << 20;  // 256 MiB

  LoadProgress(std::string label, uint64_t total_bytes, uint64_t threshold = kDefaultThreshold);
  void advance(uint64_t bytes);
  void finish();  // prints the final state once; also called by the destructor
  ~LoadProgress();
  bool enabled() const { return enabled_; }

 private:
  void draw();

  std::string label_;
  uint64_t total_ = 0, done_ = 0;
  bool enabled_ = false, tty_ = false, finished_ = false;
  int last_quarter_ = 0, last_percent_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specd
