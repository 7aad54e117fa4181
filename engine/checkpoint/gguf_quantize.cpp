#include "engine/checkpoint/gguf_quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/kernels/packed_weight.hpp"

namespace specd {

namespace {

constexpr int kSuper = 256;  // a K-quant super-block

// Round half to even, as llama.cpp's nearest_int (and lrintf in the default mode) do.
int nearest(float v) { return static_cast<int>(std::nearbyint(v)); }

uint16_t f16(float v) { return kernels::float_to_f16(v); }
float f16_back(float v) { return kernels::f16_to_float(kernels::float_to_f16(v)); }

void put_f16(std::byte* at, float v) {
  const uint16_t h = f16(v);
  std::memcpy(at, &h, 2);
}

// Scale s and offset m (x ~ s * L + m, m <= 0) of n values quantized to 0..nmax, by
// weighted least squares over candidate inverse scales (nmax + rmin + rdelta * k) /
// (max - min), k = 0..steps: the fit llama.cpp's Q4_K and Q5_K search with. Returns s;
// minus the offset goes to *neg_min.
float fit_scale_min(const float* x, const float* w, int n, int nmax, float rmin, float rdelta, int steps, uint8_t* L,
                    float* neg_min) {
  float lo = x[0], hi = x[0], sum_w = 0, sum_x = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) {
    std::fill_n(L, n, 0);
    *neg_min = -lo;
    return 0;
  }
  float inv = nmax / (hi - lo), scale = 1 / inv, offset = lo, best = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest(inv * (x[i] - lo)), 0, nmax));
    const float d = scale * L[i] + lo - x[i];
    best += w[i] * d * d;
  }
  uint8_t trial[32];
  for (int k = 0; k <= steps; ++k) {
    inv = (rmin + rdelta * k + nmax) / (hi - lo);
    float sl = 0, sl2 = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(inv * (x[i] - lo)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      sl += w[i] * l;
      sl2 += w[i] * l * l;
      sxl += w[i] * l * x[i];
    }
    const float det = sum_w * sl2 - sl * sl;
    if (det <= 0) continue;
    float s = (sum_w * sxl - sum_x * sl) / det, m = (sl2 * sum_x - sl * sxl) / det;
    if (m > 0) m = 0, s = sxl / sl2;
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float d = s * trial[i] + m - x[i];
      err += w[i] * d * d;
    }
    if (err < best) {
      std::copy_n(trial, n, L);
      best = err, scale = s, offset = m;
    }
  }
  *neg_min = -offset;
  return scale;
}

// A symmetric scale of n values quantized to -nmax..nmax-1 (stored +nmax), weighted by
// x^2, over 19 candidate scales around nmax / max|x|: llama.cpp's Q6_K search.
float fit_scale_symmetric(const float* x, int n, int nmax, uint8_t* L) {
  float amax = 0, peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), peak = x[i];
  if (amax < 1e-15f) {
    std::fill_n(L, n, 0);  // llama.cpp's bytes (the weights are 0 whatever L holds)
    return 0;
  }
  auto pass = [&](float inv, float& sxl, float& sl2, bool store) {
    sxl = sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(inv * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sxl += w * x[i] * l;
      sl2 += w * l * l;
      if (store) L[i] = static_cast<uint8_t>(l + nmax);
    }
  };
  float sxl, sl2;
  pass(-nmax / peak, sxl, sl2, true);
  float scale = sl2 > 0 ? sxl / sl2 : 0, best = scale * sxl;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    const float inv = -(nmax + 0.1f * k) / peak;
    pass(inv, sxl, sl2, false);
    if (sl2 > 0 && sxl * sxl > best * sl2) {
      pass(inv, sxl, sl2, true);
      scale = sxl / sl2, best = scale * sxl;
    }
  }
  return scale;
}

// Q4_K / Q5_K: 8 sub-blocks of 32, each a 6-bit scale and min under F16 d and dmin.
// bits 4: {d, dmin, scales[12], qs[128]}; bits 5: {d, dmin, scales[12], qh[32], qs[128]}.
void quantize_k_block(const float* x, int bits, std::byte* out) {
  const int nmax = (1 << bits) - 1;
  uint8_t L[kSuper];
  float scales[8], mins[8], w[32], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum2 = 0;
    for (int i = 0; i < 32; ++i) sum2 += xs[i] * xs[i];
    const float rms = std::sqrt(sum2 / 32);
    for (int i = 0; i < 32; ++i) w[i] = rms + std::fabs(xs[i]);
    scales[j] = bits == 4 ? fit_scale_min(xs, w, 32, nmax, -1.0f, 0.1f, 20, L + 32 * j, &mins[j])
                          : fit_scale_min(xs, w, 32, nmax, -0.5f, 0.1f, 15, L + 32 * j, &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63 / max_scale : 0, inv_min = max_min > 0 ? 63 / max_min : 0;
  uint8_t ls[8], lm[8], packed[12] = {};
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::min(63, nearest(inv_scale * scales[j])));
    lm[j] = static_cast<uint8_t>(std::min(63, nearest(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls[j], packed[j + 4] = lm[j];
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
  const float d = f16_back(max_scale / 63), dmin = f16_back(max_min / 63);
  for (int j = 0; j < 8; ++j) {  // requantize against the stored scales
    const float ds = d * ls[j], dm = dmin * lm[j];
    if (ds == 0) continue;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(nearest((x[32 * j + i] + dm) / ds), 0, nmax));
  }
  put_f16(out, max_scale / 63);
  put_f16(out + 2, max_min / 63);
  std::memcpy(out + 4, packed, 12);
  std::byte* qh = out + 16;
  std::byte* qs = bits == 5 ? out + 48 : out + 16;
  if (bits == 5) std::memset(qh, 0, 32);
  for (int g = 0; g < 4; ++g) {  // 64 inputs: low nibbles of the first 32, high of the next
    for (int i = 0; i < 32; ++i) {
      uint8_t a = L[64 * g + i], b = L[64 * g + 32 + i];
      if (bits == 5) {
        if (a > 15) a -= 16, qh[i] |= std::byte(1 << (2 * g));
        if (b > 15) b -= 16, qh[i] |= std::byte(2 << (2 * g));
      }
      qs[32 * g + i] = std::byte(a | (b << 4));
    }
  }
}

// Q6_K: {ql[128], qh[64], int8 scales[16], d}: 16 sub-blocks of 16, 8-bit scales.
void quantize_q6_k_block(const float* x, std::byte* out) {
  uint8_t L[kSuper];
  float scales[16], max_scale = 0, max_abs = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = fit_scale_symmetric(x + 16 * j, 16, 32, L + 16 * j);
    if (std::fabs(scales[j]) > max_abs) max_abs = std::fabs(scales[j]), max_scale = scales[j];
  }
  int8_t sc[16] = {};
  float d = 0;
  if (max_abs >= 1e-15f) {
    const float inv = -128 / max_scale;
    d = 1 / inv;
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<int8_t>(std::min(127, nearest(inv * scales[j])));
  }
  const float d16 = f16_back(d);
  for (int j = 0; j < 16; ++j) {
    const float ds = d16 * sc[j];
    if (ds == 0) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<uint8_t>(std::clamp(nearest(x[16 * j + i] / ds), -32, 31) + 32);
  }
  std::byte* ql = out;
  std::byte* qh = out + 128;
  for (int h = 0; h < 2; ++h) {  // two halves of 128 inputs: 64 ql bytes and 32 qh bytes each
    const uint8_t* l = L + 128 * h;
    for (int i = 0; i < 32; ++i) {
      ql[64 * h + i] = std::byte((l[i] & 0xF) | ((l[i + 64] & 0xF) << 4));
      ql[64 * h + 32 + i] = std::byte((l[i + 32] & 0xF) | ((l[i + 96] & 0xF) << 4));
      qh[32 * h + i] =
          std::byte((l[i] >> 4) | ((l[i + 32] >> 4) << 2) | ((l[i + 64] >> 4) << 4) | ((l[i + 96] >> 4) << 6));
    }
  }
  std::memcpy(out + 192, sc, 16);
  put_f16(out + 208, d);
}

// Q5_0 {d, qh[4], qs[16]} (symmetric, d = max / -16) and Q5_1 {d, m, qh[4], qs[16]}.
void quantize_q5_block(const float* x, bool with_min, std::byte* out) {
  float amax = 0, peak = 0, lo = x[0], hi = x[0];
  for (int i = 0; i < 32; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), peak = x[i];
    lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  }
  const float d = with_min ? (hi - lo) / 31 : peak / -16, inv = d ? 1 / d : 0;
  put_f16(out, d);
  if (with_min) put_f16(out + 2, lo);
  std::byte* qh_at = out + (with_min ? 4 : 2);
  std::byte* qs = qh_at + 4;
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    // llama.cpp truncates x * inv + 16.5 (or + 0.5 past the min) toward zero.
    const auto q = [&](float v) {
      return with_min ? static_cast<uint8_t>(std::min(31, static_cast<int>((v - lo) * inv + 0.5f)))
                      : static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(v * inv + 16.5f))));
    };
    const uint8_t a = q(x[j]), b = q(x[j + 16]);
    qs[j] = std::byte((a & 0xF) | ((b & 0xF) << 4));
    qh |= static_cast<uint32_t>((a & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((b & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(qh_at, &qh, 4);
}

}  // namespace

int64_t gguf_block_inputs(GgmlType type) {
  switch (type) {
    case GgmlType::q4_k:
    case GgmlType::q5_k:
    case GgmlType::q6_k:
      return kSuper;
    case GgmlType::f32:
    case GgmlType::f16:
      return 1;
    default:
      return 32;
  }
}

size_t gguf_row_bytes(GgmlType type, int64_t n) {
  const size_t blocks = static_cast<size_t>(n / gguf_block_inputs(type));
  switch (type) {
    case GgmlType::f32:
      return 4 * blocks;
    case GgmlType::f16:
      return 2 * blocks;
    case GgmlType::q8_0:
      return 34 * blocks;
    case GgmlType::q4_0:
      return 18 * blocks;
    case GgmlType::q5_0:
      return 22 * blocks;
    case GgmlType::q5_1:
      return 24 * blocks;
    case GgmlType::q4_k:
      return 144 * blocks;
    case GgmlType::q5_k:
      return 176 * blocks;
    case GgmlType::q6_k:
      return 210 * blocks;
    default:
      throw SpecdError(ErrorCode::unsupported_dtype, "specd quantize does not write " + ggml_type_name(uint32_t(type)));
  }
}

void quantize_gguf_row(const float* x, int64_t n, GgmlType type, std::byte* out) {
  const int64_t block = gguf_block_inputs(type);
  if (n % block != 0)
    throw SpecdError(ErrorCode::invalid_argument, "a row of " + std::to_string(n) + " inputs is not whole " +
                                                      ggml_type_name(uint32_t(type)) + " blocks");
  const size_t bytes = gguf_row_bytes(type, block);
  switch (type) {
    case GgmlType::f32:
      std::memcpy(out, x, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) put_f16(out + 2 * i, x[i]);
      return;
    case GgmlType::q8_0:
      return kernels::quantize_row(x, n, kernels::Dtype::q8_0, out);
    case GgmlType::q4_0:
      return kernels::quantize_row(x, n, kernels::Dtype::q4_0, out);
    default:
      break;
  }
  for (int64_t b = 0; b < n / block; ++b) {
    const float* xb = x + b * block;
    std::byte* ob = out + static_cast<size_t>(b) * bytes;
    switch (type) {
      case GgmlType::q4_k:
        quantize_k_block(xb, 4, ob);
        break;
      case GgmlType::q5_k:
        quantize_k_block(xb, 5, ob);
        break;
      case GgmlType::q6_k:
        quantize_q6_k_block(xb, ob);
        break;
      case GgmlType::q5_0:
        quantize_q5_block(xb, false, ob);
        break;
      case GgmlType::q5_1:
        quantize_q5_block(xb, true, ob);
        break;
      default:
        throw SpecdError(ErrorCode::unsupported_dtype,
                         "specd quantize does not write " + ggml_type_name(uint32_t(type)));
    }
  }
}

}  // namespace specd
