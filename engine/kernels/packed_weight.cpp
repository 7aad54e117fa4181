#include "engine/kernels/packed_weight.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include <sys/mman.h>

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
    case Dtype::q4_1:
      return "q4_1";
    case Dtype::q5_0:
      return "q5_0";
    case Dtype::q5_1:
      return "q5_1";
    case Dtype::q4_k:
      return "q4_k";
    case Dtype::q5_k:
      return "q5_k";
    case Dtype::q6_k:
      return "q6_k";
  }
  return "?";
}

size_t dtype_size(Dtype d) {
  if (is_quantized(d)) throw std::invalid_argument(std::string("dtype_size: ") + dtype_name(d) + " is a block format");
  return d == Dtype::f32 ? 4 : 2;
}

bool is_quantized(Dtype d) { return d == Dtype::q8_0 || d == Dtype::q4_0 || is_nibble_format(d); }

bool is_nibble_format(Dtype d) {
  return d == Dtype::q4_1 || d == Dtype::q5_0 || d == Dtype::q5_1 || d == Dtype::q4_k || d == Dtype::q5_k ||
         d == Dtype::q6_k;
}

int64_t quant_block_inputs(Dtype d) { return d == Dtype::q4_k || d == Dtype::q5_k || d == Dtype::q6_k ? 256 : 32; }

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

void PackedWeight::Free::operator()(std::byte* p) const {
  if (mapped > 0) {
    munmap(p, mapped);
  } else {
    std::free(p);
  }
}

namespace {

float load_source(const void* data, Dtype d, int64_t index) {
  switch (d) {
    case Dtype::f32:
      return static_cast<const float*>(data)[index];
    case Dtype::f16:
      return f16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(data)[index]);
    default:
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

int64_t PackedWeight::block_bytes_for(int64_t in, Dtype dtype) {
  if (is_quantized(dtype)) return quant_block_bytes_for(in, dtype);
  const int64_t steps = dtype == Dtype::f32 ? in : (in + 1) / 2 * 2;
  return steps * kBlock * static_cast<int64_t>(dtype_size(dtype));
}

PackedWeight PackedWeight::allocate(int64_t out, int64_t in, Dtype dtype) {
  if (out <= 0 || in <= 0) throw std::invalid_argument("PackedWeight: empty matrix");
  PackedWeight w;
  w.out_ = out;
  w.in_ = in;
  w.dtype_ = dtype;
  w.block_bytes_ = block_bytes_for(in, dtype);
  // A large matrix comes straight from mmap, on 2 MB pages where transparent huge pages
  // are on or on madvise: the kernel hands out zeroed pages at first touch (no memset
  // pass over gigabytes), and a decode step, which streams every weight, takes a TLB
  // miss per 2 MB instead of per 4 KB. At load, page faults and the zeroing memset took
  // 60% of loading an int8 3B checkpoint (perf, this VM).
  // The mapping starts on a 2 MB boundary and ends at the next 4 KB one: the tail short
  // of 2 MB stays in small pages, so a matrix costs no more memory than its bytes.
  constexpr size_t kHugePage = size_t{2} << 20, kPage = 4096;
  if (w.bytes() >= kHugePage) {
    const size_t mapped = (w.bytes() + kPage - 1) / kPage * kPage;
    void* p = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::byte*>(p);
    const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(base) % kHugePage) % kHugePage;
    if (head > 0) munmap(base, head);
    if (kHugePage - head > 0) munmap(base + head + mapped, kHugePage - head);
    madvise(base + head, mapped, MADV_HUGEPAGE);  // advice: small pages where it is refused
    w.data_ = std::unique_ptr<std::byte, Free>(base + head, Free{mapped});
  } else {
    void* p = std::aligned_alloc(64, w.bytes());
    if (!p) throw std::bad_alloc();
    w.data_.reset(static_cast<std::byte*>(p));
    std::memset(p, 0, w.bytes());
  }
  // Padding outputs and the pad input stay zero. Q8_0 quants are stored as q + 128, so
  // the padding outputs of the last block hold 128 (the rows packed overwrite their lanes).
  if (dtype == Dtype::q8_0 && out % kBlock != 0) {
    std::memset(w.data_.get() + (w.blocks() - 1) * w.block_bytes_, 0x80, in / kQuantGroup * 512);
  }
  return w;
}

// Byte copies of the stored values, never converted: a row's weights go to lane `lane`
// of each 64-byte step (the layout above).
void PackedWeight::pack_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block) {
  if (is_nibble_format(dtype)) return pack_nibble_row(src, in, dtype, lane, block);
  if (is_quantized(dtype)) return pack_quant_row(src, in, dtype, lane, block);
  if (dtype == Dtype::bf16) {  // pairs of inputs: 4 bytes a step; an odd last input leaves its pad zero
    for (int64_t i = 0; i < in; i += 2) std::memcpy(block + i * 32 + lane * 4, src + i * 2, i + 1 < in ? 4 : 2);
    return;
  }
  const size_t esize = dtype_size(dtype);
  for (int64_t i = 0; i < in; ++i) std::memcpy(block + (i * kBlock + lane) * esize, src + i * esize, esize);
}

PackedWeight PackedWeight::pack(const void* data, int64_t out, int64_t in, Dtype dtype, const PackOptions& options) {
  PackedWeightBuilder b(out, in, dtype);
  b.add(data, out, options);
  return std::move(b).finish();
}

PackedWeightBuilder::PackedWeightBuilder(int64_t out, int64_t in, Dtype dtype)
    : w_(PackedWeight::allocate(out, in, dtype)) {}

void PackedWeightBuilder::add(const void* data, int64_t rows, const PackOptions& options) {
  if (rows < 0 || next_ + rows > w_.out_) throw std::logic_error("PackedWeightBuilder: more rows than the matrix has");
  const int64_t in = w_.in_, first = next_;
  const Dtype dtype = w_.dtype_;
  const size_t row_bytes = stored_row_bytes(dtype, in);
  const auto* src = static_cast<const std::byte*>(data);
  // The part's blocks (its first and last may be shared with its neighbours', which
  // are added before and after, never at once) in chunks of about 1 MB of source, each
  // reported once packed: the pages a loader drops stay a chunk behind the packing.
  const int64_t b_first = first / PackedWeight::kBlock,
                blocks = (first + rows + PackedWeight::kBlock - 1) / PackedWeight::kBlock - b_first;
  const int64_t chunk =
      std::max<int64_t>(1, (int64_t{1} << 20) / static_cast<int64_t>(row_bytes * PackedWeight::kBlock));
  auto body = [&](int64_t b_begin, int64_t b_end) {
    for (int64_t c = b_begin; c < b_end; c += chunk) {
      const int64_t o_begin = std::max((b_first + c) * PackedWeight::kBlock, first);
      const int64_t o_end = std::min((b_first + std::min(c + chunk, b_end)) * PackedWeight::kBlock, first + rows);
      const std::byte* part = src + static_cast<size_t>(o_begin - first) * row_bytes;
      for (int64_t o = o_begin; o < o_end; ++o) {
        PackedWeight::pack_row(src + static_cast<size_t>(o - first) * row_bytes, in, dtype, o % PackedWeight::kBlock,
                               w_.data_.get() + (o / PackedWeight::kBlock) * w_.block_bytes_);
      }
      if (options.packed && o_end > o_begin) options.packed(part, static_cast<size_t>(o_end - o_begin) * row_bytes);
    }
  };
  if (options.parallel) {
    options.parallel(blocks, body);
  } else {
    body(0, blocks);
  }
  next_ += rows;
}

PackedWeight PackedWeightBuilder::finish_added() && {
  if (next_ == 0) throw std::logic_error("PackedWeightBuilder: no rows added");
  if (next_ == w_.out_) return std::move(w_);
  PackedWeight part = PackedWeight::allocate(next_, w_.in_, w_.dtype_);
  std::memcpy(part.data_.get(), w_.data_.get(), part.bytes());  // blocks of 16 rows do not depend on out
  return part;
}

PackedWeight PackedWeight::stack(std::vector<PackedWeight> parts) {
  if (parts.empty()) throw std::invalid_argument("PackedWeight::stack: no parts");
  if (parts.size() == 1) return std::move(parts.front());
  PackedWeight w;
  w.in_ = parts.front().in_;
  w.dtype_ = parts.front().dtype_;
  for (const PackedWeight& p : parts) {
    if (p.in_ != w.in_ || p.stacked()) throw std::invalid_argument("PackedWeight::stack: parts of another in");
    w.out_ += p.out_;
  }
  w.parts_ = std::move(parts);
  return w;
}

size_t PackedWeight::bytes() const {
  size_t total = static_cast<size_t>(blocks() * block_bytes_);
  for (const PackedWeight& p : parts_) total += p.bytes();
  return total;
}

PackedWeight PackedWeightBuilder::finish() && {
  if (next_ != w_.out_) throw std::logic_error("PackedWeightBuilder: rows missing");
  return std::move(w_);
}

float PackedWeight::at(int64_t o, int64_t i) const {
  for (const PackedWeight& p : parts_) {
    if (o < p.out_) return p.at(o, i);
    o -= p.out_;
  }
  if (is_nibble_format(dtype_)) return nibble_at(o, i);
  if (dtype_ == Dtype::q8_0) return static_cast<float>(quant_at(o, i)) * scale_at(o, i);
  if (dtype_ == Dtype::q4_0) return static_cast<float>(quant_at(o, i) - 8) * scale_at(o, i);
  return load_source(block(o / kBlock), dtype_, lane_offset(dtype_, o % kBlock, i));
}

}  // namespace specd::kernels
