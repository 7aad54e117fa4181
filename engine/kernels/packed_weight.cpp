#include "engine/kernels/packed_weight.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace specd::kernels {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return "f32";
    case Dtype::f16:
      return "f16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::q8_0:
      return "q8_0";
    case Dtype::q4_0:
      return "q4_0";
  }
  return "?";
}

size_t dtype_size(Dtype d) {
  if (is_quantized(d)) throw std::invalid_argument(std::string("dtype_size: ") + dtype_name(d) + " is a block format");
  return d == Dtype::f32 ? 4 : 2;
}

bool is_quantized(Dtype d) { return d == Dtype::q8_0 || d == Dtype::q4_0; }

namespace {

// Rounds the low `shift` bits of value away, to nearest with ties to even.
uint32_t round_shift_rne(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

// Bit-exact conversions, the one implementation (the safetensors reader and writer use them).
float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  const float magnitude = float(mant) * 0x1p-24f;  // zero or subnormal; exact in f32
  return sign ? -magnitude : magnitude;
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // keep NaN a quiet NaN
  return uint16_t(round_shift_rne(x, 16));                               // overflow carries into inf, as it should
}

uint16_t float_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00 | uint16_t((abs >> 13) & 0x1ff);  // quiet NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds to inf (and inf itself)
  if (abs >= 0x38800000) {                      // normal half: |f| >= 2^-14
    // Rebias the exponent in place; a mantissa carry correctly bumps the exponent.
    return sign | uint16_t(round_shift_rne(abs - (112u << 23), 13));
  }
  if (abs <= 0x33000000) return sign;  // <= 2^-25: ties to even give zero
  const uint32_t mant = (abs & 0x7fffff) | 0x800000;
  const int shift = 126 - int(abs >> 23);  // value / 2^-24 = mant >> shift
  return sign | uint16_t(round_shift_rne(mant, shift));
}

void PackedWeight::Free::operator()(std::byte* p) const { std::free(p); }

namespace {

float load_source(const void* data, Dtype d, int64_t index) {
  switch (d) {
    case Dtype::f32:
      return static_cast<const float*>(data)[index];
    case Dtype::f16:
      return f16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::q8_0:
    case Dtype::q4_0:
      break;
  }
  return 0;
}

// Offset in elements, inside a block, of weight (output lane o of 16, input i).
int64_t lane_offset(Dtype d, int64_t o, int64_t i) {
  if (d == Dtype::bf16) return (i / 2) * 32 + o * 2 + (i % 2);
  return i * PackedWeight::kBlock + o;
}

}  // namespace

PackedWeight PackedWeight::allocate(int64_t out, int64_t in, Dtype dtype, int64_t block_bytes) {
  if (out <= 0 || in <= 0) throw std::invalid_argument("PackedWeight: empty matrix");
  PackedWeight w;
  w.out_ = out;
  w.in_ = in;
  w.dtype_ = dtype;
  w.block_bytes_ = block_bytes;
  void* p = std::aligned_alloc(64, w.bytes());
  if (!p) throw std::bad_alloc();
  w.data_.reset(static_cast<std::byte*>(p));
  std::memset(p, 0, w.bytes());  // padding outputs and the pad input stay zero
  return w;
}

PackedWeight PackedWeight::pack(const void* data, int64_t out, int64_t in, Dtype dtype) {
  if (is_quantized(dtype)) return pack_blocks(static_cast<const std::byte*>(data), out, in, dtype);
  const int64_t steps = dtype == Dtype::f32 ? in : (in + 1) / 2 * 2;
  PackedWeight w = allocate(out, in, dtype, steps * kBlock * static_cast<int64_t>(dtype_size(dtype)));
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
  if (dtype_ == Dtype::q8_0) return static_cast<float>(quant_at(o, i)) * scale_at(o, i);
  if (dtype_ == Dtype::q4_0) return static_cast<float>(quant_at(o, i) - 8) * scale_at(o, i);
  return load_source(block(o / kBlock), dtype_, lane_offset(dtype_, o % kBlock, i));
}

}  // namespace specd::kernels
