#pragma once
// A weight matrix [out, in] kept in its checkpoint dtype, packed once into the layout the
// small-M linear kernels stream (engine/kernels/linear.hpp). Immutable after packing, so
// any number of threads may read it at once.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace specd::kernels {

enum class Dtype : uint8_t { f32, f16, bf16 };

const char* dtype_name(Dtype d);
size_t dtype_size(Dtype d);

// Exact conversions of the stored 16-bit formats to float (a portable reference).
float f16_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);  // round to nearest even, the rounding vdpbf16ps inputs get
uint16_t float_to_f16(float f);   // round to nearest even; for tests and benchmarks

// Layout: outputs in blocks of kBlock = 16 (the last block zero-padded); each block is
// contiguous, one 64-byte row of 16 outputs per input step:
//   F32:  [in][16] floats                      (64 bytes a step)
//   F16:  [in][16] halves, in rounded up to 2  (32 bytes a step, blocks stay 64-aligned)
//   BF16: [in/2][16][2] bf16 pairs, in rounded up to 2, the pad input's weight zero: one
//         64-byte vector holds 16 outputs x 2 consecutive inputs, the operand of vdpbf16ps.
// The same layout serves every ISA, so one packed matrix can be checked on all of them.
class PackedWeight {
 public:
  static constexpr int64_t kBlock = 16;

  PackedWeight() = default;
  // `data` is row-major [out, in] of `dtype` (a checkpoint tensor's raw bytes).
  static PackedWeight pack(const void* data, int64_t out, int64_t in, Dtype dtype);

  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  Dtype dtype() const { return dtype_; }
  int64_t blocks() const { return (out_ + kBlock - 1) / kBlock; }
  int64_t block_bytes() const { return block_bytes_; }
  size_t bytes() const { return static_cast<size_t>(blocks() * block_bytes_); }  // packed, with padding
  const std::byte* data() const { return data_.get(); }
  const std::byte* block(int64_t b) const { return data_.get() + b * block_bytes_; }
  float at(int64_t o, int64_t i) const;  // the stored weight W[o, i] as float

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;  // 64-byte aligned
  int64_t out_ = 0, in_ = 0, block_bytes_ = 0;
  Dtype dtype_ = Dtype::f32;
};

}  // namespace specd::kernels
