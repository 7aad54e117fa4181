#pragma once
// Internal to engine/kernels: the packed layout of the nibble formats (Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K) shared by the packer (packed_weight_nibble.cpp), the reference kernel
// and the vector kernels. One description serves all six: every weight is an unsigned
// quant q of 4-6 bits, a low nibble and up to two high bits, and
//   w = d * sc * q + ms * mn
// with per output and stored block an F16 d, integer sub-block scales sc (Q4_K, Q5_K: one
// per 32 inputs; Q6_K: one per 16; the others: 1), and an offset term: Q4_K and Q5_K a
// 6-bit min per 32 inputs times ms = -dmin; Q4_1 and Q5_1 ms = m times 1; Q5_0 -16 d;
// Q6_K -32 d sc. Each stored block (a "super-block": 32 or 256 inputs) is one chunk of
// a packed 16-output block, and the activations take one int8 scale per super-block,
// as llama.cpp's Q8_K (K-quants) and Q8_0/Q8_1 (the others) do.
//
// Chunk layout, for output lanes o = 0..15:
//   per group g of 32 inputs (kGroupBytes): 4 nibble vectors of 64 bytes as Q4_0's (byte
//     4o + j of vector s: input 4s + j in the low nibble, 16 + 4s + j in the high one),
//     then the high bits at the same byte: 5 bits, one vector, bit s for input 4s + j and
//     bit 4 + s for input 16 + 4s + j; 6 bits, two vectors (inputs 0..15, 16..31), bits
//     2s and 2s + 1 for input 4s + j (+ 16);
//   sub-block scales, sub_scales x 16 bytes (lane o at byte o; Q6_K's signed);
//   mins, mins x 16 bytes (Q4_K, Q5_K);
//   d, 16 F16; ms, 16 F16 (the formats whose offset is not folded into d).
#include <cstdint>

#include "engine/kernels/packed_weight.hpp"

namespace specd::kernels::detail {

enum class NibbleOffset : uint8_t {
  group_mins,  // Q4_K, Q5_K: ms * m_g, ms = -dmin
  one,         // Q4_1, Q5_1: ms * 1, ms = m
  sixteen,     // Q5_0: -16 d
  scales_x32,  // Q6_K: -32 d sc
};

struct NibbleLayout {
  int bits = 4;        // 4, 5 or 6
  int inputs = 32;     // a super-block
  int sub_scales = 0;  // 8 (one a group of 32), 16 (one a 16) or 0 (all 1)
  int mins = 0;        // 8 or 0
  NibbleOffset offset = NibbleOffset::one;
  bool signed_scales = false;

  constexpr int groups() const { return inputs / 32; }
  constexpr int group_bytes() const { return 256 + 64 * (bits - 4); }
  // The offset is d times an integer: one float step per super-block, S - Mn.
  constexpr bool folded() const { return offset == NibbleOffset::sixteen || offset == NibbleOffset::scales_x32; }
  constexpr int scales_at() const { return groups() * group_bytes(); }
  constexpr int mins_at() const { return scales_at() + 16 * sub_scales; }
  constexpr int d_at() const { return mins_at() + 16 * mins; }
  constexpr int ms_at() const { return d_at() + 32; }
  constexpr int chunk_bytes() const { return ms_at() + (folded() ? 0 : 32); }
  // Activation sums per super-block: in sub-blocks of 16 (Q6_K) or 32, as int16 pairs.
  constexpr int sum_inputs() const { return sub_scales == 16 ? 16 : 32; }
  constexpr int sum_pairs() const { return inputs / sum_inputs() == 1 ? 1 : inputs / sum_inputs() / 2; }
  // The constant multiplier of the offset sum where there are no per-lane mins.
  constexpr int offset_constant() const { return offset == NibbleOffset::sixteen ? 16 : 1; }
  // How far ahead the vector tiles prefetch their chunks' lines: about 1.3 chunks, at
  // least 3 KB. At one row and one thread Q4_K (2368-byte chunks) ran fastest at 3 KB
  // and Q6_K (3360) at 4-5 KB on AVX2, both 3-6% ahead of 2 KB and of the other's
  // distance; AVX-512 varied by under 2% (BENCHMARKS.md, "K-quant decode: one-row sums
  // and prefetch distance").
  constexpr int64_t prefetch_ahead() const {
    return chunk_bytes() * 4 / 3 < 3072 ? 3072 : chunk_bytes() * 4 / 3 / 64 * 64;
  }
};

constexpr NibbleLayout nibble_layout(Dtype d) {
  switch (d) {
    case Dtype::q4_1:
      return {4, 32, 0, 0, NibbleOffset::one, false};
    case Dtype::q5_0:
      return {5, 32, 0, 0, NibbleOffset::sixteen, false};
    case Dtype::q5_1:
      return {5, 32, 0, 0, NibbleOffset::one, false};
    case Dtype::q4_k:
      return {4, 256, 8, 8, NibbleOffset::group_mins, false};
    case Dtype::q5_k:
      return {5, 256, 8, 8, NibbleOffset::group_mins, false};
    case Dtype::q6_k:
      return {6, 256, 16, 0, NibbleOffset::scales_x32, true};
    default:
      return {};
  }
}

// A stored block decoded: quants 0..2^bits - 1, sub-block scales and mins, d and ms as F16 bits.
struct NibbleBlock {
  uint8_t q[256];
  int8_t sc[16];  // Q6_K's are signed; Q4_K's and Q5_K's 0..63 fit too
  uint8_t mn[8];
  uint16_t d = 0, ms = 0;
};

// Decodes one stored llama.cpp block of `d` (ggml-common.h's block_q4_1 ... block_q6_K).
void decode_nibble_block(Dtype d, const std::byte* src, NibbleBlock& out);

}  // namespace specd::kernels::detail
