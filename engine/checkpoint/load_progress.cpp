#include "engine/checkpoint/load_progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace specd {

LoadProgress::LoadProgress(std::string label, uint64_t total_bytes, uint64_t threshold)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(total_bytes >= threshold && total_bytes > 0),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

LoadProgress::~LoadProgress() { finish(); }

void LoadProgress::advance(uint64_t bytes) {
  done_ = std::min(total_, done_ + bytes);
  if (enabled_) draw();
}

void LoadProgress::draw() {
  const int percent = static_cast<int>(100 * done_ / total_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double gb = static_cast<double>(done_) / 1e9, total_gb = static_cast<double>(total_) / 1e9;
  if (tty_) {
    if (percent == last_percent_) return;  // redraw only when the figure changes
    last_percent_ = percent;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.2f/%.2f GB %.1fs", label_.c_str(), filled,
                 "==============================", kWidth - filled, "", percent, gb, total_gb, seconds);
    std::fflush(stderr);
    return;
  }
  const int quarter = percent / 25;
  if (quarter <= last_quarter_) return;
  last_quarter_ = quarter;
  std::fprintf(stderr, "%s: %d%% (%.2f/%.2f GB, %.1fs)\n", label_.c_str(), quarter * 25, gb, total_gb, seconds);
}

void LoadProgress::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_ && tty_) std::fputc('\n', stderr);
}

}  // namespace specd
