#pragma once
// Measured cost of a speculative round's parts, for the batch K planner: the target's
// pass as a function of the rows it feeds (T = sum of K+1 over the batch, plus any
// prompt chunk riding in it), a batched draft step as a function of the rows it feeds, and the fixed per-round
// overhead (scheduling, messages, bookkeeping). Filled at start by calibration passes
// (cost_calibration.hpp) and refitted online from every round. Plain values, no
// locking: owned by one scheduler.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace specd {

// Seconds as a piecewise-linear function of a size (tokens or rows), through points
// held at geometric buckets, each the median (size and seconds) of the last passes
// measured near it: medians, because on a shared machine a pass now and then stalls
// for ten times its usual time, and a mean would let one stall price a size out of
// the plan for good (the planner stops using it, so it is never measured again). The
// shape is not assumed: on CPU a one-row pass takes a gemv path and is far cheaper per
// token than a 4-row GEMM, and large passes turn compute-bound.
//
// On a shared host a pass's price drifts by +-20% between minutes, and a bucket the plan
// stops using (the undrafted pass while every row drafts) keeps its old price. So a
// bucket fed after more than `forget_after` other observations settles: it keeps its old
// samples until kSettleSamples new ones have come, then holds only those. Until then the
// old samples outvote one new pass, so a single stall cannot price a size out.
class CostCurve {
 public:
  static constexpr int kSettleSamples = 3;
  // Sizes 1..max_size; observations above max_size land in the last bucket. 0: never forget.
  explicit CostCurve(int32_t max_size, int64_t forget_after = 0);

  void observe(int32_t size, double seconds);
  bool empty() const;
  // Interpolated between measured buckets; below the first, the first's value; above
  // the last, proportional to size (pessimistic). -1 when empty.
  double at(int32_t size) const;
  // Observations (of any size) since the bucket `size` falls in was last fed; the
  // total count plus one when it never was.
  int64_t staleness(int32_t size) const;
  // True while the bucket `size` falls in is settling after going stale.
  bool settling(int32_t size) const;

 private:
  static constexpr int kWindow = 9;  // observations a bucket remembers
  struct Bucket {
    int32_t size;  // nominal: observations go to the nearest on a log scale
    std::array<double, kWindow> sizes{};
    std::array<double, kWindow> seconds{};
    int count = 0;           // observations held, up to kWindow
    int next = 0;            // ring position of the next observation
    double x = 0;            // median size held
    double y = 0;            // median seconds held
    int64_t last_seen = -1;  // observations_ when it was last fed
    int fresh = -1;          // settling: samples since it went stale; -1 when not settling
  };
  // The bucket nearest a size on a log scale.
  std::size_t nearest(int32_t size) const;
  std::vector<Bucket> buckets_;
  int64_t observations_ = 0;
  int64_t forget_after_ = 0;
};

// The curves read at every size: what the planner prices a round from, shown at start-up
// and by the benchmarks. Empty where a curve holds no measurement.
struct RoundCostTable {
  std::vector<double> verify_seconds;      // [t - 1]: the target's pass of t rows
  std::vector<double> draft_step_seconds;  // [r - 1]: a batched draft step of r rows
  // "target pass 1 row 79.2 ms, 5 rows 1.32x, 40 rows 4.9x; draft step 1 row 9.1 ms, 8 rows 2.1x"
  std::string describe() const;
};

class RoundCostModel {
 public:
  // The pass curve reaches max_batch x (k_max + 1) verify rows plus `prompt_rows` (a
  // round's prompt chunk rides in the same pass). Its buckets settle after
  // kVerifyForgetAfter passes without a measurement; the draft-step curve never forgets
  // (a plan that stops drafting does not measure it again).
  static constexpr int64_t kVerifyForgetAfter = 128;
  RoundCostModel(int32_t max_batch, int32_t k_max, int32_t prompt_rows = 0);

  void observe_verify(int32_t tokens, double seconds) { verify_.observe(tokens, seconds); }
  void observe_draft_step(int32_t rows, double seconds) { draft_step_.observe(rows, seconds); }
  // Seconds of a round outside its passes (scheduling, messages, bookkeeping). A round
  // with a draft phase also pays the trip to the draft lane and back, so it keeps its
  // own average: from plain rounds' alone, drafting rounds were priced 5% under what
  // they took at 2 rows on the committed pair.
  void observe_overhead(double seconds, bool drafting = false);

  // True once both curves hold a measurement: until then callers plan K per request.
  // Prompt-lookup rows draft without the draft model and need the verify curve only.
  bool ready() const { return verify_ready() && draft_ready(); }
  bool verify_ready() const { return !verify_.empty(); }
  bool draft_ready() const { return !draft_step_.empty(); }
  double verify_seconds(int32_t tokens) const { return verify_.at(tokens); }
  double draft_step_seconds(int32_t rows) const { return draft_step_.at(rows); }
  // A drafting round's, the plain round's until one has been measured.
  double overhead_seconds(bool drafting = false) const {
    return drafting && drafting_overhead_ > 0 ? drafting_overhead_ : overhead_;
  }
  int64_t verify_staleness(int32_t tokens) const { return verify_.staleness(tokens); }
  bool verify_settling(int32_t tokens) const { return verify_.settling(tokens); }
  // Both curves at every size they cover.
  RoundCostTable table() const;

 private:
  int32_t verify_rows_, draft_rows_;
  CostCurve verify_;
  CostCurve draft_step_;
  double overhead_ = 0;
  double drafting_overhead_ = 0;
};

}  // namespace specd
