#include "engine/kernels/packed_weight.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace specd::kernels {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32: return "f32";
    case Dtype::f16: return "f16";
    case Dtype::bf16: return "bf16";
  }
  return "?";
}

size_t dtype_size(Dtype d) { return d == Dtype::f32 ? 4 : 2; }

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const uint32_t bits = exp == 0x1F ? sign | 0x7F800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

uint16_t float_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7E00;
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to infinity
  if (a < 6.103515625e-05f) {                // subnormal range: multiples of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  const uint32_t abits = std::bit_cast<uint32_t>(a);
  const uint32_t rounded = abits + 0xFFF + ((abits >> 13) & 1);  // nearest even at 10 mantissa bits
  return sign | static_cast<uint16_t>(((rounded >> 23) - 112) << 10 | ((rounded >> 13) & 0x3FF));
}

void PackedWeight::Free::operator()(std::byte* p) const { std::free(p); }

namespace {

float load_source(const void* data, Dtype d, int64_t index) {
  switch (d) {
    case Dtype::f32: return static_cast<const float*>(data)[index];
    case Dtype::f16: return f16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::bf16: return bf16_to_float(static_cast<const uint16_t*>(data)[index]);
  }
  return 0;
}

// Offset in elements, inside a block, of weight (output lane o of 16, input i).
int64_t lane_offset(Dtype d, int64_t o, int64_t i) {
  if (d == Dtype::bf16) return (i / 2) * 32 + o * 2 + (i % 2);
  return i * PackedWeight::kBlock + o;
}

}  // namespace

PackedWeight PackedWeight::pack(const void* data, int64_t out, int64_t in, Dtype dtype) {
  if (out <= 0 || in <= 0) throw std::invalid_argument("PackedWeight: empty matrix");
  PackedWeight w;
  w.out_ = out;
  w.in_ = in;
  w.dtype_ = dtype;
  const int64_t steps = dtype == Dtype::f32 ? in : (in + 1) / 2 * 2;
  w.block_bytes_ = steps * kBlock * static_cast<int64_t>(dtype_size(dtype));
  void* p = std::aligned_alloc(64, w.bytes());
  if (!p) throw std::bad_alloc();
  w.data_.reset(static_cast<std::byte*>(p));
  std::memset(p, 0, w.bytes());  // padding outputs and the pad input stay zero
  const size_t esize = dtype_size(dtype);
  const auto* src = static_cast<const std::byte*>(data);
  for (int64_t o = 0; o < out; ++o) {
    std::byte* dst = w.data_.get() + (o / kBlock) * w.block_bytes_;
    for (int64_t i = 0; i < in; ++i) {  // a byte copy: the stored value, never converted
      std::memcpy(dst + lane_offset(dtype, o % kBlock, i) * esize, src + (o * in + i) * esize, esize);
    }
  }
  return w;
}

float PackedWeight::at(int64_t o, int64_t i) const {
  return load_source(block(o / kBlock), dtype_, lane_offset(dtype_, o % kBlock, i));
}

}  // namespace specd::kernels
