#include "engine/checkpoint/gguf_quant_preset.hpp"

#include <cctype>
#include <charconv>
#include <string>

namespace specd {

namespace {

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
bool more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

std::optional<int64_t> layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  if (ec != std::errc() || end == name.data() + 4) return std::nullopt;
  return layer;
}

GgmlType base_type(GgufPreset p) {
  switch (p) {
    case GgufPreset::q4_k_m:
      return GgmlType::q4_k;
    case GgufPreset::q5_k_m:
      return GgmlType::q5_k;
    case GgufPreset::q6_k:
      return GgmlType::q6_k;
    case GgufPreset::q4_0:
      return GgmlType::q4_0;
    case GgufPreset::q8_0:
      return GgmlType::q8_0;
  }
  return GgmlType::q8_0;
}

// A row that is not whole 256-blocks takes the 32-block type llama-quantize falls back to.
GgmlType fit_row(GgmlType t, int64_t inputs) {
  if (inputs % 256 != 0) {
    if (t == GgmlType::q4_k) t = GgmlType::q5_0;
    if (t == GgmlType::q5_k) t = GgmlType::q5_1;
    if (t == GgmlType::q6_k) t = GgmlType::q8_0;
  }
  return inputs % 32 == 0 ? t : GgmlType::f16;
}

}  // namespace

std::optional<GgufPreset> gguf_preset(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (GgufPreset p : {GgufPreset::q4_k_m, GgufPreset::q5_k_m, GgufPreset::q6_k, GgufPreset::q4_0, GgufPreset::q8_0}) {
    std::string n = gguf_preset_name(p);
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n == lower) return p;
  }
  return std::nullopt;
}

const char* gguf_preset_name(GgufPreset p) {
  switch (p) {
    case GgufPreset::q4_k_m:
      return "Q4_K_M";
    case GgufPreset::q5_k_m:
      return "Q5_K_M";
    case GgufPreset::q6_k:
      return "Q6_K";
    case GgufPreset::q4_0:
      return "Q4_0";
    case GgufPreset::q8_0:
      return "Q8_0";
  }
  return "";
}

uint32_t gguf_file_type(GgufPreset p) {
  switch (p) {
    case GgufPreset::q4_k_m:
      return 15;
    case GgufPreset::q5_k_m:
      return 17;
    case GgufPreset::q6_k:
      return 18;
    case GgufPreset::q4_0:
      return 2;
    case GgufPreset::q8_0:
      return 7;
  }
  return 0;
}

GgmlType gguf_tensor_type(GgufPreset p, std::string_view name, int dims, int64_t inputs, int64_t layers,
                          bool has_output) {
  if (dims < 2) return GgmlType::f32;  // norms and biases
  GgmlType t = base_type(p);
  const bool output = name == "output.weight" || (!has_output && name == "token_embd.weight");
  const bool medium = p == GgufPreset::q4_k_m || p == GgufPreset::q5_k_m;
  if (output) {
    if (t != GgmlType::q8_0) t = GgmlType::q6_k;
  } else if (const auto layer = layer_of(name);
             layer && medium && (name.ends_with(".attn_v.weight") || name.ends_with(".ffn_down.weight")) &&
             more_bits(*layer, layers)) {
    t = GgmlType::q6_k;
  }
  return fit_row(t, inputs);
}

}  // namespace specd
