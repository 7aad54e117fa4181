#include "engine/planning/round_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iomanip>
#include <sstream>

namespace specd {

namespace {

// Weight of a new per-round overhead measurement against the running average.
constexpr double kNewWeight = 0.2;

template <size_t N>
double median_of(const std::array<double, N>& values, int count) {
  std::array<double, N> sorted = values;
  std::sort(sorted.begin(), sorted.begin() + count);
  return count % 2 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
}

}  // namespace

CostCurve::CostCurve(int32_t max_size, int64_t forget_after) : forget_after_(forget_after) {
  // 1, 2, 3, 4, 6, 8, 12, 16, 24, ...: exact where the CPU kernels change paths.
  for (int32_t s = 1; s < max_size;) {
    buckets_.push_back({s});
    s = s < 4 ? s + 1 : (s & (s - 1)) == 0 ? s + s / 2 : (s / 3) * 4;
  }
  buckets_.push_back({std::max(max_size, 1)});
}

size_t CostCurve::nearest(int32_t size) const {
  const double x = std::log(static_cast<double>(std::max(size, 1)));
  auto distance = [&](const Bucket& b) { return std::abs(x - std::log(static_cast<double>(b.size))); };
  const auto it = std::min_element(buckets_.begin(), buckets_.end(),
                                   [&](const Bucket& p, const Bucket& q) { return distance(p) < distance(q); });
  return static_cast<size_t>(it - buckets_.begin());
}

void CostCurve::observe(int32_t size, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  const double x = std::max(size, 1);
  // The bucket keeps the sizes it saw, so a size between buckets is a point at its own
  // size, not bent to the bucket's.
  Bucket& b = buckets_[nearest(size)];
  if (forget_after_ > 0 && b.count > 0 && observations_ - 1 - b.last_seen > forget_after_) b.fresh = 0;
  b.last_seen = observations_++;
  b.sizes[b.next] = x;
  b.seconds[b.next] = seconds;
  b.next = (b.next + 1) % kWindow;
  b.count = std::min(b.count + 1, kWindow);
  if (b.fresh >= 0 && ++b.fresh == kSettleSamples) {  // settled: keep only the new samples
    Bucket settled{b.size};
    for (int i = kSettleSamples; i > 0; --i) {
      const int at = (b.next - i + kWindow) % kWindow;
      settled.sizes[kSettleSamples - i] = b.sizes[at];
      settled.seconds[kSettleSamples - i] = b.seconds[at];
    }
    settled.count = settled.next = kSettleSamples;
    settled.last_seen = b.last_seen;
    b = settled;
  }
  b.x = median_of(b.sizes, b.count);
  b.y = median_of(b.seconds, b.count);
}

bool CostCurve::empty() const {
  return std::none_of(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return b.count > 0; });
}

double CostCurve::at(int32_t size) const {
  const Bucket* below = nullptr;
  const Bucket* above = nullptr;
  const Bucket* last = nullptr;
  for (const Bucket& b : buckets_) {
    if (b.count == 0) continue;
    if (b.x <= size) below = &b;
    if (b.x >= size && !above) above = &b;
    last = &b;
  }
  if (!last) return -1;
  if (below && above) {
    if (below == above || above->x == below->x) return below->y;
    const double t = (size - below->x) / (above->x - below->x);
    return below->y + t * (above->y - below->y);
  }
  if (above) return above->y;  // below every measurement
  // Above every measurement: proportional to size, the compute-bound worst case, so the
  // planner never counts on cheap passes it has not seen.
  return last->y * size / last->x;
}

int64_t CostCurve::staleness(int32_t size) const {
  const Bucket& b = buckets_[nearest(size)];
  return b.last_seen < 0 ? observations_ + 1 : observations_ - 1 - b.last_seen;
}

bool CostCurve::settling(int32_t size) const { return buckets_[nearest(size)].fresh >= 0; }

RoundCostModel::RoundCostModel(int32_t max_batch, int32_t k_max, int32_t prompt_rows)
    : verify_rows_(std::max(max_batch, 1) * (std::max(k_max, 0) + 1) + std::max(prompt_rows, 0)),
      draft_rows_(std::max(max_batch, 1)),
      verify_(verify_rows_, kVerifyForgetAfter),
      draft_step_(draft_rows_) {}

RoundCostTable RoundCostModel::table() const {
  RoundCostTable t;
  for (int32_t rows = 1; verify_ready() && rows <= verify_rows_; ++rows) t.verify_seconds.push_back(verify_.at(rows));
  for (int32_t rows = 1; draft_ready() && rows <= draft_rows_; ++rows)
    t.draft_step_seconds.push_back(draft_step_.at(rows));
  return t;
}

namespace {

// "NAME 1 row X ms, R rows Yx, ...": the first size in milliseconds, the others in steps of it.
void describe_curve(std::ostringstream& out, const char* name, const std::vector<double>& seconds,
                    std::initializer_list<size_t> sizes) {
  if (seconds.empty()) return;
  out << name << " 1 row " << std::defaultfloat << std::setprecision(3) << seconds[0] * 1e3 << " ms" << std::fixed;
  for (size_t rows : sizes) {
    if (rows <= 1 || rows > seconds.size()) continue;
    out << ", " << rows << " rows " << std::setprecision(2) << seconds[rows - 1] / seconds[0] << "x";
  }
}

}  // namespace

std::string RoundCostTable::describe() const {
  if (verify_seconds.empty()) return "round costs not measured";
  std::ostringstream out;
  describe_curve(out, "target pass", verify_seconds, {5, 9, verify_seconds.size()});
  if (!draft_step_seconds.empty()) {
    out << "; ";
    describe_curve(out, "draft step", draft_step_seconds, {draft_step_seconds.size()});
  }
  return out.str();
}

void RoundCostModel::observe_overhead(double seconds, bool drafting) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  double& average = drafting ? drafting_overhead_ : overhead_;
  average = average == 0 ? seconds : (1 - kNewWeight) * average + kNewWeight * seconds;
}

}  // namespace specd
