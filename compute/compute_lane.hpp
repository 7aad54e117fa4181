#pragma once
// A compute lane: one dedicated thread on which model calls run, one at a time, with
// its own intra-op thread budget.
// Actors never run model code on their strands: they `co_await lane.run(...)`, the job
// runs on the lane thread, and the coroutine resumes on its own executor with the
// result or the job's exception. Busy intervals go to the trace recorder.
// run() may be called from any thread; stop() from any thread but the lane's own.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

namespace specd {

class ComputePermits;
class TraceRecorder;

struct LaneOptions {
  std::string name;          // trace track and thread name, e.g. "target lane"
  int intra_op_threads = 1;  // threads this lane's jobs hold (engine/kernels/KernelThreads)
  // The budget shared with the other lanes: each job holds intra_op_threads
  // permits while it runs, and its kernels borrow free ones call by call, up to the
  // whole budget. Null: no limit beyond this lane's own threads.
  ComputePermits* permits = nullptr;
};

class ComputeLane {
 public:
  ComputeLane(LaneOptions options, TraceRecorder* trace);
  ~ComputeLane();
  ComputeLane(const ComputeLane&) = delete;
  ComputeLane& operator=(const ComputeLane&) = delete;

  // Runs job() on the lane thread and returns its result to the awaiting coroutine.
  // The job is taken by reference: it must outlive the awaited call (a local of the
  // awaiting coroutine does).
  template <class Job>
  boost::asio::awaitable<std::invoke_result_t<Job&>> run(const char* label, Job& job) {
    using Result = std::invoke_result_t<Job&>;
    const auto handed = std::chrono::steady_clock::now();
    return boost::asio::co_spawn(
        context_,
        [this, label, &job, handed]() -> boost::asio::awaitable<Result> {
          BusyScope busy(*this, label, handed);
          if constexpr (std::is_void_v<Result>) {
            job();
            co_return;
          } else {
            co_return job();
          }
        },
        boost::asio::use_awaitable);
  }

  // Runs job() on the lane thread and blocks the caller until it returns (start-up work
  // such as calibration, before any actor runs). Never call it from the lane thread.
  template <class Job>
  std::invoke_result_t<Job&> run_blocking(const char* label, Job& job) {
    std::packaged_task<std::invoke_result_t<Job&>()> task(
        [this, label, &job, handed = std::chrono::steady_clock::now()] {
          BusyScope busy(*this, label, handed);
          return job();
        });
    auto result = task.get_future();
    boost::asio::post(context_, [&task] { task(); });
    return result.get();
  }

  // Lets queued jobs finish, then joins the thread. Idempotent.
  void stop();

 private:
  // Marks one job's interval: the compute permits on entry, the trace event on exit.
  // The wait since the job was handed to the lane (the lane thread's wake-up, the
  // permits) is not part of the interval; the event carries it as `waited_us`.
  class BusyScope {
   public:
    BusyScope(ComputeLane& lane, const char* label, std::chrono::steady_clock::time_point handed);
    ~BusyScope();

   private:
    ComputeLane& lane_;
    const char* label_;
    int32_t permits_ = 0;
    std::chrono::steady_clock::time_point handed_, start_;
  };

  void thread_main();

  LaneOptions options_;
  TraceRecorder* trace_;
  boost::asio::io_context context_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
};

}  // namespace specd
