#include "engine/model/weight_format.hpp"

namespace specd {

using kernels::Dtype;

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::stored:
      return "stored";
    case WeightFormat::int8:
      return "int8";
    case WeightFormat::int4:
      return "int4";
  }
  return "?";
}

std::optional<WeightFormat> parse_weight_format(std::string_view text) {
  for (WeightFormat f : {WeightFormat::stored, WeightFormat::int8, WeightFormat::int4}) {
    if (text == weight_format_name(f)) return f;
  }
  return std::nullopt;
}

std::optional<Dtype> quantized_dtype(WeightFormat format) {
  if (format == WeightFormat::stored) return std::nullopt;
  return format == WeightFormat::int8 ? Dtype::q8_0 : Dtype::q4_0;
}

}  // namespace specd
