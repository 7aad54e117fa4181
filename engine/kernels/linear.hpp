#pragma once
// y[m, out] = x[m, in] * W^T for float activations and a PackedWeight kept in its dtype.
// Weight-stationary: each weight vector is loaded once per call and multiplied into the
// accumulators of up to 16 rows, so a decode step, a verify pass of K + 1 rows or a batch
// reads the weights once. Larger m is tiled over rows by the same kernel.
//
// Row independence: a row's output is bit-identical whatever m, its position in the
// tile, the thread count: each output is one accumulator chain over the inputs in
// order, and threads split output columns, never inputs. Greedy speculative decoding
// relies on it (a verify pass must equal one-row steps exactly).
//
// Prefill (larger m): the same kernel tiled over 16-row chunks, each weight block reused
// from L2 by all chunks. Hand-written because it beats the packaged GEMMs at every m the
// engine runs (OpenBLAS repacks the weights on every call; oneDNN and libxsmm BF16 lose
// from M = 8): the figures are in BENCHMARKS.md ("Why hand-written") and DESIGN.md.
// Re-measure: `specd bench --kernels --prefill --threads 1`.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/kernels/kernel_threads.hpp"
#include "engine/kernels/packed_weight.hpp"

namespace specd::kernels {

// Kernel families, chosen once by CPU features; `reference` is portable scalar code.
// avx2vnni is avx2 with the block formats on AVX-VNNI's vpdpbusd (ymm).
enum class Isa : uint8_t { reference, avx2, avx2vnni, avx512f, avx512bf16 };

const char* isa_name(Isa isa);
std::optional<Isa> isa_named(std::string_view name);  // isa_name's inverse; nullopt for no tier
bool isa_supported(Isa isa);                          // by this CPU (__builtin_cpu_supports)
// The fastest supported, decided once per process; SPECD_KERNEL_ISA forces one. Throws
// std::invalid_argument for a tier that is misspelt or that this CPU lacks.
Isa best_isa();

// x: m rows of w.in() floats, contiguous; y: m rows of w.out() floats, contiguous.
// Runs on `threads` (nullptr: the calling thread only). Allocation-free after the first
// calls on a thread (a thread-local scratch for converted activations grows as needed).
void linear(const PackedWeight& w, const float* x, int64_t m, float* y,
            KernelThreads* threads = KernelThreads::current());

// The block formats (Q8_0, Q4_0) multiply int8 activations: each row's n inputs (a
// multiple of 32) in groups of 32 with a scale d = amax / 127 and q = x / d rounded to
// nearest even (ggml's Q8_0 activations, the scale kept in F32). A function of the row
// alone, so a row's outputs do not depend on m. The AVX-512 tiers run them with vpdpbusd
// where the CPU has AVX512-VNNI, else with the AVX2 kernels; avx2vnni with vpdpbusd on ymm.
void quantize_activations(const float* x, int64_t n, int8_t* q, float* d);
// The same in groups of `group` inputs (n a multiple of it, it of 8): the nibble formats take one
// scale per stored block, 256 inputs for the K-quants as llama.cpp's Q8_K.
void quantize_activations(const float* x, int64_t n, int64_t group, int8_t* q, float* d);

// The same with an explicit kernel family (tests and benchmarks); isa must be supported.
void linear(const PackedWeight& w, const float* x, int64_t m, float* y, Isa isa, KernelThreads* threads);

}  // namespace specd::kernels
