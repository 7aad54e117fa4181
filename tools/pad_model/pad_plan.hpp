#pragma once
// The shape a trained Llama model is padded to, and the padded model's config: head_dim
// and the query-per-KV ratio kept, head counts following from the hidden size, and
// rms_norm_eps scaled so RMSNorm over the zero-padded residual equals the original's.
// Plain values and pure functions; any thread.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/checkpoint/model_config.hpp"

namespace specd {

struct PadShape {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
};

// The body of Llama-3.2-3B ("llama-3.2-3b": hidden 3072, MLP 8192, 28 layers) or
// Llama-3.2-1B ("llama-3.2-1b": 2048, 8192, 16); nullopt for any other name.
std::optional<PadShape> pad_preset(std::string_view name);

// Throws SpecdError(invalid_argument) when the shape is smaller than the source in any
// dimension, or the hidden size is not a multiple of head_dim x (query heads per KV head).
ModelConfig padded_config(const ModelConfig& source, const PadShape& shape);

// sqrt(d / D), the factor on the norm weights, is a power of two (so exact in any float
// format) exactly when D / d is a power of 4.
bool norm_scale_is_power_of_two(int64_t d, int64_t D);

}  // namespace specd
