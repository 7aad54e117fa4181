// PackedWeight's nibble formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): llama.cpp's stored
// blocks (ggml-common.h) decoded and repacked, bits unchanged, into the layout of
// nibble_format.hpp. No weight is requantized: every quant, scale and min keeps its value.
#include <cstring>

#include "engine/kernels/nibble_format.hpp"

namespace specd::kernels {

namespace {

using detail::NibbleBlock;
using detail::NibbleLayout;

constexpr int64_t kB = PackedWeight::kBlock;

uint16_t half_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

uint8_t byte_at(const std::byte* p, int64_t i) { return std::to_integer<uint8_t>(p[i]); }

// Q4_K's and Q5_K's 12 bytes of eight 6-bit scales and eight 6-bit mins: sub-blocks 0..3
// in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); 4..7 in the nibbles of bytes
// 8..11 with their top two bits in the spare bits of bytes 0..7.
void k_scales_and_mins(const std::byte* packed, NibbleBlock& out) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      out.sc[j] = static_cast<int8_t>(byte_at(packed, j) & 63);
      out.mn[j] = byte_at(packed, j + 4) & 63;
    } else {
      out.sc[j] = static_cast<int8_t>((byte_at(packed, j + 4) & 0x0f) | ((byte_at(packed, j - 4) >> 6) << 4));
      out.mn[j] = static_cast<uint8_t>((byte_at(packed, j + 4) >> 4) | ((byte_at(packed, j) >> 6) << 4));
    }
  }
}

// 32 inputs of the old formats: qs[j] holds inputs j (low nibble) and j + 16; the fifth
// bit of input j is bit j of the little-endian qh.
void small_quants(const std::byte* qs, const std::byte* qh, NibbleBlock& out) {
  uint32_t high = 0;
  if (qh) std::memcpy(&high, qh, 4);
  for (int j = 0; j < 16; ++j) {
    out.q[j] = static_cast<uint8_t>((byte_at(qs, j) & 0x0f) | ((high >> j) & 1) << 4);
    out.q[j + 16] = static_cast<uint8_t>((byte_at(qs, j) >> 4) | ((high >> (j + 16)) & 1) << 4);
  }
}

}  // namespace

namespace detail {

void decode_nibble_block(Dtype d, const std::byte* src, NibbleBlock& out) {
  switch (d) {
    case Dtype::q4_1:  // {d, m, qs[16]}
      out.d = half_at(src), out.ms = half_at(src + 2);
      small_quants(src + 4, nullptr, out);
      return;
    case Dtype::q5_0:  // {d, qh[4], qs[16]}
      out.d = half_at(src);
      small_quants(src + 6, src + 2, out);
      return;
    case Dtype::q5_1:  // {d, m, qh[4], qs[16]}
      out.d = half_at(src), out.ms = half_at(src + 2);
      small_quants(src + 8, src + 4, out);
      return;
    case Dtype::q4_k:    // {d, dmin, scales[12], qs[128]}: per 64 inputs, 32 bytes: low nibbles, then high
    case Dtype::q5_k: {  // {d, dmin, scales[12], qh[32], qs[128]}: qh bit 2c (+1) the fifth bit
      out.d = half_at(src), out.ms = half_at(src + 2) ^ 0x8000;  // ms = -dmin
      k_scales_and_mins(src + 4, out);
      const bool five = d == Dtype::q5_k;
      const std::byte *qh = src + 16, *qs = src + (five ? 48 : 16);
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t b = byte_at(qs, 32 * c + l), h = five ? byte_at(qh, l) : 0;
          out.q[64 * c + l] = static_cast<uint8_t>((b & 0x0f) | ((h >> (2 * c)) & 1) << 4);
          out.q[64 * c + 32 + l] = static_cast<uint8_t>((b >> 4) | ((h >> (2 * c + 1)) & 1) << 4);
        }
      }
      return;
    }
    case Dtype::q6_k: {  // {ql[128], qh[64], int8 scales[16], d}: per 128 inputs, 64 ql and 32 qh bytes
      out.d = half_at(src + 208);
      for (int k = 0; k < 16; ++k) out.sc[k] = static_cast<int8_t>(byte_at(src + 192, k));
      for (int n = 0; n < 2; ++n) {
        const std::byte *ql = src + 64 * n, *qh = src + 128 + 32 * n;
        for (int l = 0; l < 32; ++l) {
          const uint8_t h = byte_at(qh, l), a = byte_at(ql, l), b = byte_at(ql, l + 32);
          uint8_t* q = out.q + 128 * n + l;
          q[0] = static_cast<uint8_t>((a & 0x0f) | (h & 3) << 4);
          q[32] = static_cast<uint8_t>((b & 0x0f) | ((h >> 2) & 3) << 4);
          q[64] = static_cast<uint8_t>((a >> 4) | ((h >> 4) & 3) << 4);
          q[96] = static_cast<uint8_t>((b >> 4) | ((h >> 6) & 3) << 4);
        }
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace detail

void PackedWeight::pack_nibble_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block) {
  const NibbleLayout L = detail::nibble_layout(dtype);
  const size_t stored = quant_block_bytes(dtype);
  NibbleBlock nb{};
  for (int64_t t = 0; t < in / L.inputs; ++t, src += stored) {
    detail::decode_nibble_block(dtype, src, nb);
    std::byte* chunk = block + t * L.chunk_bytes();
    for (int g = 0; g < L.groups(); ++g) {
      std::byte* group = chunk + g * L.group_bytes();
      for (int j = 0; j < 16; ++j) {  // inputs j and 16 + j share a byte
        const uint8_t lo = nb.q[32 * g + j], hi = nb.q[32 * g + 16 + j];
        const int s = j / 4, at = static_cast<int>(lane) * 4 + j % 4;
        group[s * 64 + at] = static_cast<std::byte>((lo & 0x0f) | (hi & 0x0f) << 4);
        if (L.bits == 5) {
          group[256 + at] |= static_cast<std::byte>((lo >> 4) << s | (hi >> 4) << (4 + s));
        } else if (L.bits == 6) {
          group[256 + at] |= static_cast<std::byte>((lo >> 4) << (2 * s));
          group[320 + at] |= static_cast<std::byte>((hi >> 4) << (2 * s));
        }
      }
    }
    for (int k = 0; k < L.sub_scales; ++k) chunk[L.scales_at() + 16 * k + lane] = static_cast<std::byte>(nb.sc[k]);
    for (int k = 0; k < L.mins; ++k) chunk[L.mins_at() + 16 * k + lane] = static_cast<std::byte>(nb.mn[k]);
    std::memcpy(chunk + L.d_at() + 2 * lane, &nb.d, 2);
    if (!L.folded()) std::memcpy(chunk + L.ms_at() + 2 * lane, &nb.ms, 2);
  }
}

int32_t PackedWeight::nibble_quant_at(int64_t o, int64_t i) const {
  const NibbleLayout L = detail::nibble_layout(dtype_);
  const int64_t lane = o % kB, t = i / L.inputs, j = i % 32, s = (j % 16) / 4;
  const bool high = j >= 16;
  const std::byte* group = block(o / kB) + t * L.chunk_bytes() + (i % L.inputs) / 32 * L.group_bytes();
  const int64_t at = lane * 4 + j % 4;
  const uint8_t nib = byte_at(group, s * 64 + at);
  int32_t q = high ? nib >> 4 : nib & 0x0f;
  if (L.bits == 5) q |= ((byte_at(group, 256 + at) >> (high ? 4 + s : s)) & 1) << 4;
  if (L.bits == 6) q |= ((byte_at(group, (high ? 320 : 256) + at) >> (2 * s)) & 3) << 4;
  return q;
}

float PackedWeight::nibble_at(int64_t o, int64_t i) const {
  const NibbleLayout L = detail::nibble_layout(dtype_);
  const int64_t lane = o % kB, t = i / L.inputs, k = i % L.inputs;
  const std::byte* chunk = block(o / kB) + t * L.chunk_bytes();
  const double d = f16_to_float(half_at(chunk + L.d_at() + 2 * lane));
  double sc = 1;
  if (L.sub_scales > 0) {
    const uint8_t b = byte_at(chunk, L.scales_at() + 16 * (k * L.sub_scales / L.inputs) + lane);
    sc = L.signed_scales ? static_cast<int8_t>(b) : b;
  }
  const double q = nibble_quant_at(o, i);
  switch (L.offset) {
    case detail::NibbleOffset::group_mins:
      return static_cast<float>(d * sc * q + f16_to_float(half_at(chunk + L.ms_at() + 2 * lane)) *
                                                 byte_at(chunk, L.mins_at() + 16 * (k / 32) + lane));
    case detail::NibbleOffset::one:
      return static_cast<float>(d * q + f16_to_float(half_at(chunk + L.ms_at() + 2 * lane)));
    case detail::NibbleOffset::sixteen:
      return static_cast<float>(d * (q - 16));
    case detail::NibbleOffset::scales_x32:
      return static_cast<float>(d * sc * (q - 32));
  }
  return 0;
}

}  // namespace specd::kernels
