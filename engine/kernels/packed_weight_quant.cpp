// PackedWeight's block formats (Q8_0, Q4_0): llama.cpp's quantizers and the repacking of
// its blocks into the kernels' layout (packed_weight.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/nibble_format.hpp"
#include "engine/kernels/packed_weight.hpp"

namespace specd::kernels {

namespace {

constexpr int64_t kB = PackedWeight::kBlock;

int64_t group_quant_bytes(Dtype d) { return d == Dtype::q8_0 ? 512 : 256; }

void check_quant_shape(int64_t in, Dtype d) {
  if (!is_quantized(d)) throw std::invalid_argument(std::string("not a block format: ") + dtype_name(d));
  if (in % quant_block_inputs(d) != 0) {
    throw std::invalid_argument(std::string("PackedWeight: ") + dtype_name(d) + " needs in a multiple of " +
                                std::to_string(quant_block_inputs(d)) + ", got " + std::to_string(in));
  }
}

// quantize() and quantize_row() write only llama.cpp's Q8_0 and Q4_0.
void check_quantizer(Dtype d) {
  if (d != Dtype::q8_0 && d != Dtype::q4_0)
    throw std::invalid_argument(std::string("specd quantizes only to q8_0 and q4_0, not ") + dtype_name(d));
}

// Byte of output lane o, input i of a block, and for Q4_0 whether the high nibble.
int64_t quant_offset(Dtype d, int64_t o, int64_t i, bool* high) {
  const int64_t g = i / kQuantGroup, j = i % kQuantGroup;
  if (d == Dtype::q8_0) return g * 512 + (j / 4) * 64 + o * 4 + j % 4;
  *high = j >= 16;
  return g * 256 + ((j % 16) / 4) * 64 + o * 4 + j % 4;
}

int64_t scale_offset(int64_t in, Dtype d, int64_t o, int64_t i) {
  return (in / kQuantGroup) * group_quant_bytes(d) + (i / kQuantGroup) * 32 + o * 2;
}

void quantize_q8_0(const float* x, std::byte* block) {
  float amax = 0;
  for (int j = 0; j < kQuantGroup; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t h = float_to_f16(d);
  std::memcpy(block, &h, 2);
  for (int j = 0; j < kQuantGroup; ++j)
    block[2 + j] = static_cast<std::byte>(static_cast<int8_t>(std::round(x[j] * id)));
}

void quantize_q4_0(const float* x, std::byte* block) {
  float amax = 0, max = 0;  // the value of largest magnitude, with its sign
  for (int j = 0; j < kQuantGroup; ++j) {
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  }
  const float d = max / -8, id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t h = float_to_f16(d);
  std::memcpy(block, &h, 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[16 + j] * id + 8.5f)));
    block[2 + j] = static_cast<std::byte>(lo | hi << 4);
  }
}

}  // namespace

size_t quant_block_bytes(Dtype d) {
  check_quant_shape(0, d);
  switch (d) {
    case Dtype::q8_0:
      return 34;
    case Dtype::q4_0:
      return 18;
    case Dtype::q4_1:
      return 20;
    case Dtype::q5_0:
      return 22;
    case Dtype::q5_1:
      return 24;
    case Dtype::q4_k:
      return 144;
    case Dtype::q5_k:
      return 176;
    default:  // q6_k
      return 210;
  }
}

size_t stored_row_bytes(Dtype d, int64_t in) {
  if (is_quantized(d)) return static_cast<size_t>(in / quant_block_inputs(d)) * quant_block_bytes(d);
  return static_cast<size_t>(in) * dtype_size(d);
}

int64_t PackedWeight::quant_block_bytes_for(int64_t in, Dtype dtype) {
  check_quant_shape(in, dtype);
  if (is_nibble_format(dtype)) {
    const detail::NibbleLayout L = detail::nibble_layout(dtype);
    return (in / L.inputs * L.chunk_bytes() + 63) / 64 * 64;
  }
  return (in / kQuantGroup * (group_quant_bytes(dtype) + 32) + 63) / 64 * 64;  // quants, then scales
}

void quantize_row(const float* x, int64_t n, Dtype d, std::byte* blocks) {
  check_quantizer(d);
  check_quant_shape(n, d);
  const size_t bytes = quant_block_bytes(d);
  for (int64_t g = 0; g < n / kQuantGroup; ++g) {
    if (d == Dtype::q8_0) {
      quantize_q8_0(x + g * kQuantGroup, blocks + g * bytes);
    } else {
      quantize_q4_0(x + g * kQuantGroup, blocks + g * bytes);
    }
  }
}

void PackedWeight::pack_quant_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block) {
  const int64_t groups = in / kQuantGroup;
  const int64_t quant_bytes = group_quant_bytes(dtype), block_size = static_cast<int64_t>(quant_block_bytes(dtype));
  for (int64_t g = 0; g < groups; ++g, src += block_size) {
    std::memcpy(block + scale_offset(in, dtype, lane, g * kQuantGroup), src, 2);
    std::byte* quants = block + g * quant_bytes + lane * 4;
    // Four inputs a 64-byte vector: Q8_0 as q + 128, 8 vectors; Q4_0's qs bytes as they
    // are (qs[j] holds inputs j and j + 16, the pair the layout puts in one byte), 4.
    for (int64_t s = 0; s < quant_bytes / 64; ++s) {
      uint32_t four;
      std::memcpy(&four, src + 2 + s * 4, 4);
      if (dtype == Dtype::q8_0) four ^= 0x80808080u;
      std::memcpy(quants + s * 64, &four, 4);
    }
  }
}

PackedWeight PackedWeight::quantize(const void* data, Dtype source, int64_t out, int64_t in, Dtype dtype) {
  if (is_quantized(source)) throw std::invalid_argument("PackedWeight::quantize: the source must be f32, f16 or bf16");
  check_quantizer(dtype);
  check_quant_shape(in, dtype);
  const size_t row_bytes = in / kQuantGroup * quant_block_bytes(dtype);
  std::vector<std::byte> blocks(out * row_bytes);
  std::vector<float> row(in);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      const int64_t k = o * in + i;
      row[i] = source == Dtype::f32   ? static_cast<const float*>(data)[k]
               : source == Dtype::f16 ? f16_to_float(static_cast<const uint16_t*>(data)[k])
                                      : bf16_to_float(static_cast<const uint16_t*>(data)[k]);
    }
    quantize_row(row.data(), in, dtype, blocks.data() + o * row_bytes);
  }
  return pack(blocks.data(), out, in, dtype);
}

int32_t PackedWeight::quant_at(int64_t o, int64_t i) const {
  if (is_nibble_format(dtype_)) return nibble_quant_at(o, i);
  bool high = false;
  const auto byte = std::to_integer<uint8_t>(block(o / kB)[quant_offset(dtype_, o % kB, i, &high)]);
  if (dtype_ == Dtype::q8_0) return static_cast<int32_t>(byte) - 128;
  return high ? byte >> 4 : byte & 0x0f;
}

float PackedWeight::scale_at(int64_t o, int64_t i) const {
  if (dtype_ != Dtype::q8_0 && dtype_ != Dtype::q4_0)  // the nibble formats have several scales a weight
    throw std::logic_error(std::string("PackedWeight::scale_at: not a q8_0 or q4_0 matrix but ") + dtype_name(dtype_));
  uint16_t h;
  std::memcpy(&h, block(o / kB) + scale_offset(in_, dtype_, o % kB, i), 2);
  return f16_to_float(h);
}

}  // namespace specd::kernels
