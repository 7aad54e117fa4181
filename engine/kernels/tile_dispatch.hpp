#pragma once
// Internal to engine/kernels: the order in which the per-ISA linear kernels
// (linear_*.cpp) run their register tiles over a call's rows and output blocks. A file
// passes its tiles of R rows and NV blocks as a captureless lambda,
// `[]<int R, int NV>() { return tile<..., R, NV>; }`; the tiles stay in the files. No intrinsics
// here: every ISA's translation unit includes it.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "engine/kernels/linear_isa.hpp"

namespace specd::kernels::detail {

// Only templates over the caller's TU-local lambda (internal linkage): a shared inline could link another ISA's build.

using TileFn = void (*)(const KernelCall& c, int64_t b, int64_t r0);
using ChunkFn = void (*)(const KernelCall& c, int64_t b_begin, int64_t b_end, int64_t r0);

// R rows over blocks [b_begin, b_end): tiles of Width(R) blocks, then one block at a time.
template <class Tiles, int (*Width)(int), int R>
void row_chunk(const KernelCall& c, int64_t b_begin, int64_t b_end, int64_t r0) {
  constexpr int NV = Width(R);
  constexpr TileFn wide = Tiles{}.template operator()<R, NV>(), narrow = Tiles{}.template operator()<R, 1>();
  int64_t b = b_begin;
  for (; b + NV <= b_end; b += NV) wide(c, b, r0);
  for (; b < b_end; ++b) narrow(c, b, r0);
}

template <class Tiles, int (*Width)(int), size_t... I>
constexpr auto chunk_table(std::index_sequence<I...>) {
  return std::array<ChunkFn, sizeof...(I)>{row_chunk<Tiles, Width, static_cast<int>(I) + 1>...};
}

// Up to kRows rows in one pass over the blocks; more rows in chunks of even size (8 rows
// of at most 5 as 4 + 4, not 5 + 3: a small chunk leaves the FMA units idle) over groups
// of at most 512 KB of blocks (half a 1 MB L2) while every chunk reuses them.
template <int kRows, int (*Width)(int), class Tiles>
void row_chunks_per_l2_group(const KernelCall& c, int64_t b_begin, int64_t b_end, Tiles) {
  static constexpr auto table = chunk_table<Tiles, Width>(std::make_index_sequence<kRows>());
  if (c.m <= kRows) return table[c.m - 1](c, b_begin, b_end, 0);
  const int64_t chunks = (c.m + kRows - 1) / kRows, group = std::clamp<int64_t>((512 << 10) / c.w->block_bytes(), 1, 4);
  for (int64_t b = b_begin; b < b_end; b += group) {
    const int64_t be = std::min(b + group, b_end);
    for (int64_t i = 0, r0 = 0; i < chunks; ++i) {
      const int64_t rows = c.m / chunks + (i < c.m % chunks ? 1 : 0);
      table[rows - 1](c, b, be, r0);
      r0 += rows;
    }
  }
}

}  // namespace specd::kernels::detail
