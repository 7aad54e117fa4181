#pragma once
// Embeds a trained Llama checkpoint in a larger Llama shape without changing its
// function, and writes it as a normal Hugging Face directory. The residual stream grows
// from d to D with the extra dimensions held at exactly zero: every tensor that reads it
// gets zero input columns, every tensor that writes it zero output rows, RMSNorm weights
// are multiplied by sqrt(d / D) (rms_norm_eps by d / D in the config). Extra query and KV
// heads, extra MLP units and extra layers get small seeded random weights, so the padded
// model computes like a real one, but the matrices that would carry their result into
// the residual (o_proj columns, down_proj columns, whole o_proj and down_proj of extra
// layers) are zero. Adding exact zeros leaves a float sum unchanged, so the padded
// model's outputs differ from the original's only by summation order. Runs on the
// caller's thread; memory is one padded tensor at a time.
#include <cstdint>
#include <filesystem>
#include <optional>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/safetensors.hpp"
#include "engine/checkpoint/sharded_writer.hpp"
#include "tools/common/checkpoint_output.hpp"
#include "tools/pad_model/pad_plan.hpp"

namespace specd {

struct PadOptions {
  PadShape shape;
  std::optional<DType> dtype;  // nullopt: each tensor in the dtype the source stores it in
  uint64_t seed = 1;
  double std_dev = 0.02;                     // of the new random weights
  uint64_t max_shard_bytes = 5'000'000'000;  // HF's default max_shard_size, 5 GB
};

struct PadResult {
  ModelConfig config;
  ParameterCount parameters;
  WrittenWeights written;
  // The norm weights were stored as F32 in a half-precision checkpoint, because
  // sqrt(d / D) would round in F16/BF16 (D / d not a power of 4).
  bool f32_norms = false;
};

// Reads the model directory `from`, writes config.json, the weights (model.safetensors
// or shards with an index), generation_config.json (copied when present) and the
// tokenizer files into `to`. Throws SpecdError: invalid_argument for a shape that cannot
// hold the source, plus whatever reading the source raises (missing_file,
// missing_tensor, shape_mismatch, ...).
PadResult pad_model(const std::filesystem::path& from, const std::filesystem::path& to, const PadOptions& options);

}  // namespace specd
