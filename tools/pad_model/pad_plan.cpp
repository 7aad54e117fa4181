#include "tools/pad_model/pad_plan.hpp"

#include <string>

#include "engine/base/errors.hpp"

namespace specd {

std::optional<PadShape> pad_preset(std::string_view name) {
  // Sizes from the Llama-3.2-3B-Instruct and -1B-Instruct config.json files.
  if (name == "llama-3.2-3b") return PadShape{3072, 8192, 28};
  if (name == "llama-3.2-1b") return PadShape{2048, 8192, 16};
  return std::nullopt;
}

namespace {

void require_at_least(const char* what, int64_t padded, int64_t source) {
  if (padded < source)
    throw SpecdError(ErrorCode::invalid_argument, std::string(what) + " " + std::to_string(padded) +
                                                      " is smaller than the source's " + std::to_string(source));
}

}  // namespace

ModelConfig padded_config(const ModelConfig& source, const PadShape& shape) {
  require_at_least("hidden size", shape.hidden, source.hidden_size);
  require_at_least("intermediate size", shape.intermediate, source.intermediate_size);
  require_at_least("layer count", shape.layers, source.num_hidden_layers);
  const int64_t group = source.num_attention_heads / source.num_key_value_heads;
  // Original query heads keep their indices, so HF's h / group still finds their KV head.
  const int64_t unit = source.head_dim * group;
  if (shape.hidden % unit != 0)
    throw SpecdError(ErrorCode::invalid_argument, "hidden size " + std::to_string(shape.hidden) +
                                                      " is not a multiple of head_dim " +
                                                      std::to_string(source.head_dim) + " x " + std::to_string(group) +
                                                      " query heads per KV head = " + std::to_string(unit));
  if (shape.hidden / source.head_dim < source.num_attention_heads)
    throw SpecdError(ErrorCode::invalid_argument, "hidden size " + std::to_string(shape.hidden) + " holds " +
                                                      std::to_string(shape.hidden / source.head_dim) +
                                                      " heads of head_dim " + std::to_string(source.head_dim) +
                                                      ", fewer than the source's " +
                                                      std::to_string(source.num_attention_heads));
  ModelConfig c = source;
  c.hidden_size = shape.hidden;
  c.intermediate_size = shape.intermediate;
  c.num_hidden_layers = shape.layers;
  c.num_attention_heads = shape.hidden / source.head_dim;
  c.num_key_value_heads = c.num_attention_heads / group;
  // mean over D of the padded square = (d / D) x mean over d; eps follows.
  c.rms_norm_eps = source.rms_norm_eps * double(source.hidden_size) / double(shape.hidden);
  return c;
}

bool norm_scale_is_power_of_two(int64_t d, int64_t D) {
  if (d <= 0 || D % d != 0) return false;
  int64_t ratio = D / d;
  while (ratio % 4 == 0) ratio /= 4;
  return ratio == 1;
}

}  // namespace specd
