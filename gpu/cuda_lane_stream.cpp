#include "gpu/cuda_lane_stream.hpp"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

namespace specd {

struct CudaLaneStream::State {
  explicit State(int device) : stream(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device))) {}
  c10::cuda::CUDAStream stream;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

CudaLaneStream::CudaLaneStream(int device) : state_(std::make_unique<State>(device)) {}

CudaLaneStream::~CudaLaneStream() = default;

void CudaLaneStream::enter() { state_->guard.emplace(state_->stream); }

void CudaLaneStream::leave() {
  state_->stream.synchronize();
  state_->guard.reset();
}

}  // namespace specd
