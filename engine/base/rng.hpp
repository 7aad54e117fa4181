#pragma once
// A request's own random stream: same seed, same draws, on every platform. Torch-free,
// so the round's state (SpecSequence) can be named where libtorch is not included.
#include <cstdint>
#include <random>

namespace specd {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(engine_); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace specd
