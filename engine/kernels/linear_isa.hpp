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
struct KernelCall {
  const PackedWeight* w = nullptr;
  const void* x = nullptr;
  int64_t m = 0;
  float* y = nullptr;  // m rows of w->out()
};

// Computes output blocks [block_begin, block_end) for all m rows.
using BlockKernel = void (*)(const KernelCall& call, int64_t block_begin, int64_t block_end);

BlockKernel reference_kernel(Dtype d);
BlockKernel avx2_kernel(Dtype d);
BlockKernel avx512f_kernel(Dtype d);
BlockKernel avx512bf16_kernel();  // BF16 weights; activations as BF16 pairs

// Rows per register tile and how many 16-output blocks a tile holds for r rows: about
// 20 zmm accumulators, leaving room for the weight vectors and a broadcast.
constexpr int kTileRows = 16;
constexpr int avx512_tile_blocks(int rows) { return rows <= 5 ? 4 : rows <= 6 ? 3 : rows <= 10 ? 2 : 1; }

}  // namespace specd::kernels::detail
