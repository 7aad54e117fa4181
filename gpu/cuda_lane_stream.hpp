#pragma once
// A compute lane's own CUDA stream: where the GPU path starts. Compiled only by ctest
// cuda_lane_compiles (target specd_cuda_lane_check, CMakeLists.txt) and selected by
// nothing until a device forward exists. Lane thread only: call run() inside a
// ComputeLane job.
#include <memory>
#include <type_traits>

namespace specd {

class CudaLaneStream {
 public:
  // A stream from `device`'s pool, so the draft's and the target's kernels can run
  // concurrently.
  explicit CudaLaneStream(int device);
  ~CudaLaneStream();
  CudaLaneStream(const CudaLaneStream&) = delete;
  CudaLaneStream& operator=(const CudaLaneStream&) = delete;

  // Runs job() with this stream current and synchronises the stream before returning,
  // so a result the lane hands back is ready to read.
  template <class Job>
  std::invoke_result_t<Job&> run(Job& job) {
    Current current(*this);
    return job();
  }

 private:
  class Current {
   public:
    explicit Current(CudaLaneStream& stream) : stream_(stream) { stream_.enter(); }
    ~Current() { stream_.leave(); }

   private:
    CudaLaneStream& stream_;
  };

  void enter();
  void leave();

  struct State;  // the c10 stream and its guard: CUDA headers stay out of this one
  std::unique_ptr<State> state_;
};

}  // namespace specd
