#pragma once
// Small randomly initialised Llama models for tests: fast, deterministic, and shaped
// to exercise grouped-query attention and an explicit head_dim.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "engine/checkpoint/model_config.hpp"
#include "engine/model/llama_model.hpp"
#include "tests/support/temp_dir.hpp"

namespace specd::testing {

inline ModelConfig tiny_config(bool tied = true) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.intermediate_size = 96;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;  // not hidden/heads (12): exercises an explicit head_dim
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = tied;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  return c;
}

// Weights large enough that logits differ clearly between tokens.
inline std::shared_ptr<LlamaModel> random_model(const ModelConfig& c, uint64_t seed) {
  auto model = std::make_shared<LlamaModel>(c);
  at::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) {
    if (p.dim() == 1) {
      p.uniform_(0.8, 1.2);
    } else {
      p.normal_(0.0, 0.25);
    }
  }
  model->eval();
  return model;
}

// A fresh empty directory under the system temp dir, removed by the destructor.

}  // namespace specd::testing
