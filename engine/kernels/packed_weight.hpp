#pragma once
// A weight matrix [out, in] kept in its checkpoint dtype, packed once into the layout the
// small-M linear kernels stream (engine/kernels/linear.hpp). Immutable after packing, so
// any number of threads may read it at once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace specd::kernels {

// q8_0 and q4_0 are llama.cpp's block formats: 32 consecutive inputs of one output share
// an F16 scale d; Q8_0 stores int8 q (w = q * d, 8.5 bits a weight), Q4_0 4-bit q
// (w = (q - 8) * d, 4.5 bits a weight). Their `in` must be a multiple of 32.
// The nibble formats are llama.cpp's other blocks, run as stored (packed_weight_nibble.cpp):
// Q4_1, Q5_0, Q5_1 (32 inputs a block) and the K-quants Q4_K, Q5_K, Q6_K (super-blocks of
// 256 with 6- or 8-bit sub-block scales); their `in` must be a multiple of their block.
enum class Dtype : uint8_t { f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k };

const char* dtype_name(Dtype d);
size_t dtype_size(Dtype d);           // bytes a weight; throws for the block formats
bool is_quantized(Dtype d);           // every block format: q8_0, q4_0 and the nibble formats
bool is_nibble_format(Dtype d);       // q4_1, q5_0, q5_1, q4_k, q5_k, q6_k
int64_t quant_block_inputs(Dtype d);  // inputs a stored block: 32, or 256 for the K-quants

// llama.cpp's blocks as GGUF stores them: block_q8_0 {f16 d; int8 qs[32]} (34 bytes) and
// block_q4_0 {f16 d; uint8 qs[16]} (18 bytes), qs[j]'s low nibble input j and its high
// nibble input j + 16.
constexpr int64_t kQuantGroup = 32;
size_t quant_block_bytes(Dtype d);
// Bytes of one row of `in` weights as a checkpoint stores it: in values, or in / 32 blocks.
size_t stored_row_bytes(Dtype d, int64_t in);
// One row of n (a multiple of 32) floats into n / 32 blocks, with llama.cpp's rounding
// (quantize_row_q8_0_ref / quantize_row_q4_0_ref).
void quantize_row(const float* x, int64_t n, Dtype d, std::byte* blocks);

// Exact conversions of the stored 16-bit formats to float (a portable reference).
float f16_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);  // round to nearest even, the rounding vdpbf16ps inputs get
uint16_t float_to_f16(float f);   // round to nearest even; for tests and benchmarks

// Layout: outputs in blocks of kBlock = 16 (the last block zero-padded); each block is
// contiguous, one 64-byte row of 16 outputs per input step:
//   F32:  [in][16] floats                      (64 bytes a step)
//   F16:  [in][16] halves, in rounded up to 2  (32 bytes a step, blocks stay 64-aligned)
//   BF16: [in/2][16][2] bf16 pairs, in rounded up to 2, the pad input's weight zero: one
//         64-byte vector holds 16 outputs x 2 consecutive inputs, the operand of vdpbf16ps.
//   Q8_0, Q4_0: per block, the quants of all G = in / 32 groups, then their scales:
//     quants, G x 512 bytes (Q8_0): 8 vectors of 64 bytes a group, vector s holding for
//       output lane o (bytes 4o..4o+3) inputs 4s..4s+3 of the group as q + 128 (unsigned):
//       the operand layout of vpdpbusd (and of vpmaddubsw for AVX2's half vectors);
//     quants, G x 256 bytes (Q4_0): 4 vectors of 64 bytes a group, byte 4o + j of vector
//       s holding inputs 4s + j (low nibble) and 16 + 4s + j (high nibble) of output o;
//     scales, G x 16 F16 (32 bytes a group, d of output lanes 0..15); the block rounded
//       up to 64 bytes. Quants apart from scales keep every quant vector 64-aligned.
//   The nibble formats: per stored block of inputs, a chunk (nibble_format.hpp): per
//     group of 32, Q4_0's 4 nibble vectors and 0-2 vectors of high bits, then the
//     sub-block scales and mins as bytes and the F16 scales of output lanes 0..15.
// The same layout serves every ISA, so one packed matrix can be checked on all of them.

struct PackOptions {
  // Runs body over [0, n) in disjoint ranges, on any threads, returning when all are
  // done (the model loader passes at::parallel_for). Empty: on the caller's thread.
  std::function<void(int64_t n, const std::function<void(int64_t, int64_t)>& body)> parallel;
  // Told each span of source rows once packed, on the thread that packed it: a loader
  // drops those file pages then, so a large matrix is never resident twice.
  std::function<void(const std::byte* data, size_t bytes)> packed;
};

class PackedWeight {
 public:
  static constexpr int64_t kBlock = 16;

  PackedWeight() = default;
  // `data` is row-major [out, in] of `dtype` (a checkpoint tensor's raw bytes); for
  // q8_0 and q4_0, out rows of in / 32 llama.cpp blocks (a GGUF tensor's bytes).
  static PackedWeight pack(const void* data, int64_t out, int64_t in, Dtype dtype, const PackOptions& options = {});

  // Row-major [out, in] weights of `source` (f32, f16 or bf16) quantized to `dtype`
  // (q8_0 or q4_0) with llama.cpp's rounding (quantize_row), then packed.
  static PackedWeight quantize(const void* data, Dtype source, int64_t out, int64_t in, Dtype dtype);
  static PackedWeight quantize(const float* data, int64_t out, int64_t in, Dtype dtype) {
    return quantize(data, Dtype::f32, out, in, dtype);
  }

  // Matrices of one `in` stacked by rows, each kept in its own dtype (llama-quantize's
  // Q4_K_M stores q and k as Q4_K and v as Q6_K, which specd fuses): linear() runs each
  // part on its kernel. dtype() is the first part's; parts() lists them.
  static PackedWeight stack(std::vector<PackedWeight> parts);
  bool stacked() const { return !parts_.empty(); }
  const std::vector<PackedWeight>& parts() const { return parts_; }

  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  Dtype dtype() const { return dtype_; }
  int64_t blocks() const { return (out_ + kBlock - 1) / kBlock; }
  int64_t block_bytes() const { return block_bytes_; }
  size_t bytes() const;  // packed, with padding
  const std::byte* data() const { return data_.get(); }
  const std::byte* block(int64_t b) const { return data_.get() + b * block_bytes_; }
  float at(int64_t o, int64_t i) const;  // the stored weight W[o, i] as float (dequantized)
  // The quantized formats: output o's quant of input i (q8_0: -128..127; q4_0: 0..15,
  // 8 for zero; the nibble formats: 0..2^bits - 1, unsigned as stored) and, for q8_0
  // and q4_0, its group's scale d.
  int32_t quant_at(int64_t o, int64_t i) const;
  float scale_at(int64_t o, int64_t i) const;

 private:
  friend class PackedWeightBuilder;
  static PackedWeight allocate(int64_t out, int64_t in, Dtype dtype);  // zeroed (Q8_0 quants: q = 0)
  static int64_t block_bytes_for(int64_t in, Dtype dtype);
  static int64_t quant_block_bytes_for(int64_t in, Dtype dtype);  // throws unless in is a multiple of 32
  // One source row (output o, lane o % 16) into its block.
  static void pack_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block);
  static void pack_quant_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block);
  static void pack_nibble_row(const std::byte* src, int64_t in, Dtype dtype, int64_t lane, std::byte* block);
  float nibble_at(int64_t o, int64_t i) const;
  int32_t nibble_quant_at(int64_t o, int64_t i) const;
  struct Free {
    size_t mapped;  // bytes mapped with mmap; 0 (value-initialized): from aligned_alloc
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;  // 64-byte aligned
  int64_t out_ = 0, in_ = 0, block_bytes_ = 0;
  Dtype dtype_ = Dtype::f32;
  std::vector<PackedWeight> parts_;  // a stacked matrix's parts; then data_ is empty
};

// Packs a matrix part by part as its rows arrive (q, k and v fused; gate and up): each
// part's memory may go once add returns.
class PackedWeightBuilder {
 public:
  PackedWeightBuilder(int64_t out, int64_t in, Dtype dtype);
  // The next `rows` rows: row-major [rows, in] of the dtype (the block formats: rows of
  // in / 32 llama.cpp blocks).
  void add(const void* data, int64_t rows, const PackOptions& options = {});
  PackedWeight finish() &&;  // throws std::logic_error unless every row was added
  // The rows added so far as a matrix of their own (a copy of their blocks), when the
  // next part has another dtype (PackedWeight::stack).
  PackedWeight finish_added() &&;
  int64_t added() const { return next_; }
  Dtype dtype() const { return w_.dtype(); }

 private:
  PackedWeight w_;
  int64_t next_ = 0;
};

}  // namespace specd::kernels
