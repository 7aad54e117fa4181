#include "engine/kernels/attention.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/attention_isa.hpp"

namespace specd::kernels {

void attend(const PagedKv& kv, int64_t keys, const float* q, int32_t group, float scale, float* out) {
  attend(kv, keys, q, group, scale, out, best_isa());
}

void attend(const PagedKv& kv, int64_t keys, const float* q, int32_t group, float scale, float* out, Isa isa) {
  if (!isa_supported(isa)) throw std::invalid_argument(std::string("kernel ISA not supported here: ") + isa_name(isa));
  thread_local std::vector<float> scores;
  detail::AttentionCall c{kv, keys, q, group, scale, out};
  c.padded = (keys + kv.block_size - 1) / kv.block_size * kv.block_size;
  if (scores.size() < static_cast<size_t>(c.padded * group)) scores.resize(static_cast<size_t>(c.padded * group));
  c.scores = scores.data();
  const bool vector_shape =
      kv.head_dim % detail::kAttentionVectorMultiple == 0 && kv.block_size % detail::kAttentionVectorMultiple == 0;
#if defined(SPECD_KERNELS_X86)
  if (vector_shape && (isa == Isa::avx2 || isa == Isa::avx2vnni)) return detail::attention_avx2(c);
  if (vector_shape && (isa == Isa::avx512f || isa == Isa::avx512bf16)) return detail::attention_avx512f(c);
#else
  (void)vector_shape;
#endif
  detail::attention_reference(c);
}

}  // namespace specd::kernels
