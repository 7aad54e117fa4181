#pragma once
// Internal to engine/kernels: the per-ISA kernels behind linear(). Each family lives in
// its own translation unit compiled with its own -m flags (CMakeLists.txt), so only code
// reached after the run-time CPU check uses those instructions.
#include <cstdint>

#include "engine/kernels/packed_weight.hpp"

namespace specd::kernels::detail {

// One call's operands. x is input-major: the m rows' values of input step k are
// contiguous at x + k * m, floats (one input a step), or for the vdpbf16ps kernel uint32
// BF16 pairs (inputs 2k and 2k + 1). Row-major x would put the rows a tile reads a
// multiple of 4 KB apart for the usual sizes, all in one L1 set: at 8 and 16 rows the
// set thrashed and M = 16 took 5.5x the time of M = 1 instead of about 2x. Inputs past
// w.in() (the pad of an odd in) are zero.
//
// For the block formats (Q8_0, Q4_0) x holds the rows quantized by quantize_activations,
// four int8 inputs a uint32 (inputs 4k..4k+3 of row r at x[k * m + r]); per group g of 32
// inputs and row r, x_scale[g * m + r] is the rows's scale and group_start[g * m + r] the
// integer the group's sum starts from: -offset * sum(q) for weights stored as unsigned
// q + offset (128 for Q8_0, 8 for Q4_0), so u8 x s8 products need no correction after.
//
// For the nibble formats (nibble_format.hpp) x holds the same quads, quantized with one
// scale per super-block t (x_scale[t * m + r]), and x_sums[(t * P + p) * m + r] holds the
// sums of the row's quants over sub-blocks 2p and 2p + 1 as two int16 (low, high), P =
// NibbleLayout::sum_pairs(): the operand of vpmaddwd against two lanes' mins.
struct KernelCall {
  const PackedWeight* w = nullptr;
  const void* x = nullptr;
  int64_t m = 0;
  float* y = nullptr;  // m rows of w->out()
  const float* x_scale = nullptr;
  const int32_t* group_start = nullptr;
  const int32_t* x_sums = nullptr;
};

// Computes output blocks [block_begin, block_end) for all m rows.
using BlockKernel = void (*)(const KernelCall& call, int64_t block_begin, int64_t block_end);

BlockKernel reference_kernel(Dtype d);
BlockKernel avx2_kernel(Dtype d);
BlockKernel avx512f_kernel(Dtype d);
BlockKernel avx512bf16_kernel();  // BF16 weights; activations as BF16 pairs
// Q8_0 and Q4_0 weights with int8 activations: the integer sum of each 32-input group,
// then acc = fma(float(sum), d_w * d_x, acc) over the groups in order. Exact integer
// sums and that one float chain make every tier bit-identical to the reference.
BlockKernel reference_quant_kernel(Dtype d);
BlockKernel avx2_quant_kernel(Dtype d);        // vpmaddubsw + vpmaddwd
BlockKernel avx2vnni_quant_kernel(Dtype d);    // vpdpbusd on ymm (AVX-VNNI)
BlockKernel avx512vnni_quant_kernel(Dtype d);  // vpdpbusd (AVX512-VNNI and BW)
// The nibble formats, per output and super-block: the exact integers S = sum of sc * q * x
// over its sub-blocks and Mn = its offset's sum (nibble_format.hpp), then
// acc = fma(float(S - Mn), d * d_x, acc) where the offset is folded into d, else
// acc = fma(float(S), d * d_x, acc); acc = fma(float(Mn), ms * d_x, acc).
BlockKernel reference_nibble_kernel(Dtype d);
BlockKernel avx2_nibble_kernel(Dtype d);        // vpmaddubsw + vpmaddwd by the sub-block scales
BlockKernel avx2vnni_nibble_kernel(Dtype d);    // vpdpbusd on ymm + vpmulld by the sub-block scales
BlockKernel avx512vnni_nibble_kernel(Dtype d);  // vpdpbusd + vpmulld by the sub-block scales

// Every tier's weight streams are prefetched this far ahead of the line a tile reads:
// with the hardware prefetcher alone, tiles holding one or two streams a thread waited on
// memory (BENCHMARKS.md: "Kernel tuning choices", "The AVX2 tier's block kernels",
// "Prefetching the BF16 kernels' weights"). __builtin_prefetch, not an intrinsic: the
// same instruction whatever -m flags the including file has.
inline constexpr int64_t kPrefetchAhead = 4096;
inline void prefetch_ahead(const std::byte* line, int64_t ahead = kPrefetchAhead) {
  __builtin_prefetch(line + ahead, 0, 3);
}

// Where a tile's stream goes on past its block. A tile of nv blocks reads one stream a
// block, the blocks contiguous: past the end of its block a stream continues in the
// block nv further on (its place in the next tile), not in the next block, which another
// stream of this tile has read already. Prefetches `ahead` bytes past `line` there.
struct TileStreams {
  int64_t block_bytes = 0;
  int nv = 1;
  void prefetch(const std::byte* block, const std::byte* line, int64_t ahead) const {
    const std::byte* p = line + ahead;
    __builtin_prefetch(p < block + block_bytes ? p : p + (nv - 1) * block_bytes, 0, 3);
  }
};

// Rows per register tile and how many 16-output blocks a tile holds for r rows: about
// 20 zmm accumulators, leaving room for the weight vectors and a broadcast.
constexpr int kTileRows = 16;
constexpr int avx512_tile_blocks(int rows) { return rows <= 5 ? 4 : rows <= 6 ? 3 : rows <= 10 ? 2 : 1; }

}  // namespace specd::kernels::detail
