#include "engine/kernels/linear.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/linear_isa.hpp"
#include "engine/kernels/nibble_format.hpp"

#if defined(SPECD_KERNELS_X86)
#include <cpuid.h>
#endif

namespace specd::kernels {

namespace {

using detail::BlockKernel;
using detail::KernelCall;

#if defined(SPECD_KERNELS_X86)
// AVX-VNNI (vpdpbusd on ymm, VEX): CPUID leaf 7 subleaf 1, EAX bit 4; clang 16's
// __builtin_cpu_supports does not know it.
bool cpu_has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4));
}
#endif

bool cpu_has_isa(Isa isa) {
#if defined(SPECD_KERNELS_X86)
  // clang 16's __builtin_cpu_supports does not know "f16c": read CPUID leaf 1 for it.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  switch (isa) {
    case Isa::reference:
      return true;
    case Isa::avx2:
      return avx2;
    case Isa::avx2vnni:
      return avx2 && cpu_has_avx_vnni();
    case Isa::avx512f:
      return avx2 && __builtin_cpu_supports("avx512f");
    case Isa::avx512bf16:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == Isa::reference;
#endif
}

// SPECD_KERNEL_ISA=reference|avx2|avx2vnni|avx512f|avx512bf16 forces a tier (for comparisons);
// empty is unset. A misspelt or unsupported tier is refused: running on the reference
// instead would be silently 100x slower.
Isa choose_isa() {
  const char* forced = std::getenv("SPECD_KERNEL_ISA");
  if (!forced || !*forced) {
    for (Isa isa : {Isa::avx512bf16, Isa::avx512f, Isa::avx2vnni, Isa::avx2}) {
      if (isa_supported(isa)) return isa;
    }
    return Isa::reference;
  }
  const std::optional<Isa> isa = isa_named(forced);
  if (!isa) {
    throw std::invalid_argument(
        std::string("SPECD_KERNEL_ISA=") + forced +
        ": not a kernel tier (reference, avx2, avx2vnni, avx512f, avx512bf16; unset for the best)");
  }
  if (!isa_supported(*isa))
    throw std::invalid_argument(std::string("SPECD_KERNEL_ISA=") + forced + ": this CPU lacks that tier");
  return *isa;
}

// vpdpbusd on zmm: AVX512-VNNI with AVX512BW's byte operations.
bool cpu_has_avx512_vnni() {
#if defined(SPECD_KERNELS_X86)
  static const bool has =
      isa_supported(Isa::avx512f) && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

BlockKernel quant_kernel_for(Isa isa, Dtype d) {
#if defined(SPECD_KERNELS_X86)
  if (isa == Isa::avx512f || isa == Isa::avx512bf16) {
    return cpu_has_avx512_vnni() ? detail::avx512vnni_quant_kernel(d) : detail::avx2_quant_kernel(d);
  }
  if (isa == Isa::avx2) return detail::avx2_quant_kernel(d);
  if (isa == Isa::avx2vnni) return detail::avx2vnni_quant_kernel(d);
#endif
  return detail::reference_quant_kernel(d);
}

// The nibble formats: vpdpbusd on the AVX-512 tiers where the CPU has AVX512-VNNI (else
// the AVX2 kernel) and on avx2vnni (ymm). Integer sums and float chain are the reference's, so
// the results are the same bits on all of them.
BlockKernel nibble_kernel_for(Isa isa, Dtype d) {
#if defined(SPECD_KERNELS_X86)
  if ((isa == Isa::avx512f || isa == Isa::avx512bf16) && cpu_has_avx512_vnni()) {
    return detail::avx512vnni_nibble_kernel(d);
  }
  if (isa == Isa::avx2vnni) return detail::avx2vnni_nibble_kernel(d);
  if (isa != Isa::reference) return detail::avx2_nibble_kernel(d);
#endif
  (void)isa;
  return detail::reference_nibble_kernel(d);
}

BlockKernel kernel_for(Isa isa, Dtype d) {
  if (is_nibble_format(d)) return nibble_kernel_for(isa, d);
  if (is_quantized(d)) return quant_kernel_for(isa, d);
#if defined(SPECD_KERNELS_X86)
  switch (isa) {
    case Isa::reference:
      break;
    case Isa::avx2:
    case Isa::avx2vnni:
      return detail::avx2_kernel(d);
    case Isa::avx512f:
      return detail::avx512f_kernel(d);
    case Isa::avx512bf16:
      return d == Dtype::bf16 ? detail::avx512bf16_kernel() : detail::avx512f_kernel(d);
  }
#endif
  return detail::reference_kernel(d);
}

// Rounds to nearest even by adding 1.5 * 2^23, where a float has no fraction bits left;
// exact for |v| < 2^22 (here |v| <= 127), and the same on every ISA and compiler.
int32_t round_even(float v) { return std::bit_cast<int32_t>(v + 12582912.0f) - 0x4B400000; }

// The block formats' activations, input-major like the rest (KernelCall).
void prepare_quantized(const PackedWeight& w, const float* x, int64_t m, KernelCall& call) {
  thread_local std::vector<uint32_t> quads;
  thread_local std::vector<float> scales, row_scales;
  thread_local std::vector<int32_t> starts;
  thread_local std::vector<int8_t> row;
  const int64_t in = w.in(), groups = in / kQuantGroup;
  const int32_t offset = w.dtype() == Dtype::q8_0 ? 128 : 8;
  if (quads.size() < static_cast<size_t>(in / 4 * m)) quads.resize(in / 4 * m);
  if (scales.size() < static_cast<size_t>(groups * m)) scales.resize(groups * m), starts.resize(groups * m);
  row.resize(in);
  row_scales.resize(groups);
  for (int64_t r = 0; r < m; ++r) {
    quantize_activations(x + r * in, in, row.data(), row_scales.data());
    for (int64_t k = 0; k < in / 4; ++k) std::memcpy(&quads[k * m + r], &row[4 * k], 4);
    for (int64_t g = 0; g < groups; ++g) {
      int32_t sum = 0;
      for (int64_t j = 0; j < kQuantGroup; ++j) sum += row[g * kQuantGroup + j];
      scales[g * m + r] = row_scales[g];
      starts[g * m + r] = -offset * sum;
    }
  }
  call.x = quads.data();
  call.x_scale = scales.data();
  call.group_start = starts.data();
}

// The nibble formats' activations: quads as above, one scale per super-block and the
// int16 pairs of sub-block sums (KernelCall).
void prepare_nibble(const PackedWeight& w, const float* x, int64_t m, KernelCall& call) {
  thread_local std::vector<uint32_t> quads;
  thread_local std::vector<float> scales, row_scales;
  thread_local std::vector<int32_t> sums, sub_sums;
  thread_local std::vector<int8_t> row;
  const detail::NibbleLayout L = detail::nibble_layout(w.dtype());
  const int64_t in = w.in(), superblocks = in / L.inputs, pairs = L.sum_pairs(), span = L.sum_inputs();
  if (quads.size() < static_cast<size_t>(in / 4 * m)) quads.resize(in / 4 * m);
  if (scales.size() < static_cast<size_t>(superblocks * m)) scales.resize(superblocks * m);
  if (sums.size() < static_cast<size_t>(superblocks * pairs * m)) sums.resize(superblocks * pairs * m);
  const int64_t subs = L.inputs / span;  // sub-blocks a super-block: 1 (then pairs are (sum, 0)), 8 or 16
  row.resize(in);
  row_scales.resize(superblocks);
  sub_sums.resize(in / span);
  for (int64_t r = 0; r < m; ++r) {
    quantize_activations(x + r * in, in, L.inputs, row.data(), row_scales.data());
    for (int64_t k = 0; k < in / 4; ++k) std::memcpy(&quads[k * m + r], &row[4 * k], 4);
    for (int64_t s = 0; s < in / span; ++s) {
      int32_t sum = 0;
      for (int64_t j = 0; j < span; ++j) sum += row[s * span + j];
      sub_sums[s] = sum;
    }
    for (int64_t t = 0; t < superblocks; ++t) {
      scales[t * m + r] = row_scales[t];
      for (int64_t p = 0; p < pairs; ++p) {
        const int32_t low = sub_sums[t * subs + 2 * p], high = subs == 1 ? 0 : sub_sums[t * subs + 2 * p + 1];
        sums[(t * pairs + p) * m + r] =
            static_cast<int32_t>(static_cast<uint32_t>(low & 0xffff) | static_cast<uint32_t>(high) << 16);
      }
    }
  }
  call.x = quads.data();
  call.x_scale = scales.data();
  call.x_sums = sums.data();
}

// The activations input-major (see KernelCall): BF16 pairs for vdpbf16ps (each value
// rounded on its own, so a row's pairs do not depend on m), else floats; zero past
// w.in() up to the padded step count. Kept per thread, so a steady state allocates
// nothing; the copy reads m * in floats, small beside the weights.
void prepare_activations(const PackedWeight& w, const float* x, int64_t m, bool bf16_pairs, KernelCall& call) {
  thread_local std::vector<uint32_t> pairs;
  thread_local std::vector<float> floats;
  const int64_t in = w.in(), padded = w.dtype() == Dtype::bf16 ? (in + 1) / 2 * 2 : in;
  if (bf16_pairs) {
    const int64_t steps = padded / 2;
    if (pairs.size() < static_cast<size_t>(steps * m)) pairs.resize(steps * m);
    for (int64_t r = 0; r < m; ++r) {
      const float* xr = x + r * in;
      for (int64_t k = 0; k < steps; ++k) {
        const uint32_t hi = 2 * k + 1 < in ? float_to_bf16(xr[2 * k + 1]) : 0;
        pairs[k * m + r] = float_to_bf16(xr[2 * k]) | hi << 16;
      }
    }
    call.x = pairs.data();
    return;
  }
  if (m == 1 && padded == in) {  // one row is already input-major
    call.x = x;
    return;
  }
  if (floats.size() < static_cast<size_t>(padded * m)) floats.resize(padded * m);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < padded; ++i) floats[i * m + r] = i < in ? x[r * in + i] : 0.0f;
  }
  call.x = floats.data();
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::reference:
      return "reference";
    case Isa::avx2:
      return "avx2";
    case Isa::avx2vnni:
      return "avx2vnni";
    case Isa::avx512f:
      return "avx512f";
    case Isa::avx512bf16:
      return "avx512bf16";
  }
  return "?";
}

std::optional<Isa> isa_named(std::string_view name) {
  for (Isa isa : {Isa::reference, Isa::avx2, Isa::avx2vnni, Isa::avx512f, Isa::avx512bf16}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

// Read once: CPUID traps to the hypervisor on a VM (it cost ~6 us a call here, more
// than a small layer's arithmetic).
bool isa_supported(Isa isa) {
  static const bool supported[] = {cpu_has_isa(Isa::reference), cpu_has_isa(Isa::avx2), cpu_has_isa(Isa::avx2vnni),
                                   cpu_has_isa(Isa::avx512f), cpu_has_isa(Isa::avx512bf16)};
  return supported[static_cast<int>(isa)];
}

Isa best_isa() {
  static const Isa chosen = choose_isa();
  return chosen;
}

void quantize_activations(const float* x, int64_t n, int8_t* q, float* d) {
  quantize_activations(x, n, kQuantGroup, q, d);
}

void quantize_activations(const float* x, int64_t n, int64_t group, int8_t* q, float* d) {
  for (int64_t g = 0; g < n / group; ++g, x += group, q += group) {
    // Eight running maxima, not one: a single chain waits on each max's latency, and
    // the maximum is exact in any order, so the scale is the same bits.
    float lanes[8] = {};
    for (int64_t j = 0; j < group; j += 8) {
      for (int l = 0; l < 8; ++l) lanes[l] = std::max(lanes[l], std::fabs(x[j + l]));
    }
    float amax = 0;
    for (float v : lanes) amax = std::max(amax, v);
    d[g] = amax / 127;
    const float id = d[g] != 0 ? 1.0f / d[g] : 0.0f;  // as ggml: x * (1 / d)
    for (int64_t j = 0; j < group; ++j) q[j] = static_cast<int8_t>(round_even(x[j] * id));
  }
}

void linear(const PackedWeight& w, const float* x, int64_t m, float* y, KernelThreads* threads) {
  linear(w, x, m, y, best_isa(), threads);
}

namespace {

// Each part of a stacked matrix into its own columns of y: a copy of m x part.out()
// floats a part, small beside streaming the part's weights.
void linear_stacked(const PackedWeight& w, const float* x, int64_t m, float* y, Isa isa, KernelThreads* threads) {
  thread_local std::vector<float> part_y;
  int64_t first = 0;
  for (const PackedWeight& part : w.parts()) {
    if (part_y.size() < static_cast<size_t>(m * part.out())) part_y.resize(m * part.out());
    linear(part, x, m, part_y.data(), isa, threads);
    for (int64_t r = 0; r < m; ++r) {
      std::memcpy(y + r * w.out() + first, part_y.data() + r * part.out(), part.out() * sizeof(float));
    }
    first += part.out();
  }
}

}  // namespace

void linear(const PackedWeight& w, const float* x, int64_t m, float* y, Isa isa, KernelThreads* threads) {
  if (m <= 0) return;
  if (!isa_supported(isa)) throw std::invalid_argument(std::string("kernel ISA not supported here: ") + isa_name(isa));
  if (w.stacked()) return linear_stacked(w, x, m, y, isa, threads);
  KernelCall call;
  call.w = &w;
  call.m = m;
  call.y = y;
  if (is_nibble_format(w.dtype())) {
    prepare_nibble(w, x, m, call);
  } else if (is_quantized(w.dtype())) {
    prepare_quantized(w, x, m, call);
  } else {
    prepare_activations(w, x, m, isa == Isa::avx512bf16 && w.dtype() == Dtype::bf16, call);
  }
  const BlockKernel kernel = kernel_for(isa, w.dtype());
  if (!threads || threads->size() == 1) return kernel(call, 0, w.blocks());
  // A part below ~64 KB of weights costs less than waking a worker.
  const int64_t grain = std::max<int64_t>(1, (64 << 10) / w.block_bytes());
  threads->parallel_for(w.blocks(), grain, [&](int64_t begin, int64_t end) { kernel(call, begin, end); });
}

}  // namespace specd::kernels
