#include "compute/compute_lane.hpp"

#include <pthread.h>

#include <algorithm>

#include "compute/compute_permits.hpp"
#include "compute/compute_threads.hpp"
#include "trace/trace_recorder.hpp"

namespace specd {

ComputeLane::ComputeLane(LaneOptions options, TraceRecorder* trace)
    : options_(std::move(options)), trace_(trace), work_(boost::asio::make_work_guard(context_)) {
  thread_ = std::thread([this] { thread_main(); });
}

ComputeLane::~ComputeLane() { stop(); }

void ComputeLane::thread_main() {
  // The model's compute runs on this lane's kernel threads: its own intra-op budget,
  // plus the threads it borrows from the shared permits while the other lane is idle.
  const int own = std::max(1, options_.intra_op_threads);
  // "target lane" -> "target kernels": its workers, told apart from the other lane's in top.
  std::string workers = options_.name;
  if (workers.ends_with(" lane")) workers.resize(workers.size() - 5);
  ComputeThreadScope threads(options_.permits ? std::max(own, options_.permits->total()) : own, own, options_.permits,
                             workers + " kernels");
  pthread_setname_np(pthread_self(), options_.name.substr(0, 15).c_str());
  context_.run();
}

void ComputeLane::stop() {
  if (work_) work_.reset();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

ComputeLane::BusyScope::BusyScope(ComputeLane& lane, const char* label, std::chrono::steady_clock::time_point handed)
    : lane_(lane), label_(label), handed_(handed) {
  if (lane_.options_.permits) permits_ = lane_.options_.permits->acquire(lane_.options_.intra_op_threads);
  start_ = std::chrono::steady_clock::now();
}

ComputeLane::BusyScope::~BusyScope() {
  if (permits_ > 0) lane_.options_.permits->release(permits_);
  if (!lane_.trace_) return;
  const double waited_us = std::chrono::duration<double, std::micro>(start_ - handed_).count();
  lane_.trace_->complete(label_, lane_.options_.name, start_, std::chrono::steady_clock::now(),
                         {{"waited_us", waited_us}});
}

}  // namespace specd
