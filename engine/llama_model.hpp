#pragma once
// The Llama decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, optional tied
// embeddings) as a torch::nn::Module whose parameter names are exactly Hugging Face's
// (`model.layers.N.self_attn.q_proj.weight`, ...), so checkpoints load by name and the
// trainer's autograd runs on the same code. Not thread-safe: one lane drives a model.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model_config.hpp"

namespace specd {

class KvCache;

// One call's batch: rows are right-padded to T tokens; row b has lengths[b] valid tokens
// and writes them into cache slot slots[b] at the positions after what the slot holds.
struct ForwardBatch {
  at::Tensor tokens;             // [B, T] int64
  std::vector<int32_t> slots;    // B cache slots
  std::vector<int64_t> lengths;  // B valid token counts, 1..T
};

enum class LogitsFor { all_positions, last_position };

// A bias-free linear layer. Its weight starts uninitialised (a checkpoint load or the
// trainer sets it): torch::nn::Linear's random init took 9 s of a 1B model's load.
struct Projection : torch::nn::Module {
  Projection(int64_t in, int64_t out);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;  // [out, in]
};

struct RmsNorm : torch::nn::Module {
  RmsNorm(int64_t dim, double eps);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;
  double eps;
};

struct Attention : torch::nn::Module {
  explicit Attention(const ModelConfig& c);
  std::shared_ptr<Projection> q_proj, k_proj, v_proj, o_proj;
};

struct Mlp : torch::nn::Module {
  explicit Mlp(const ModelConfig& c);
  at::Tensor forward(const at::Tensor& x);
  std::shared_ptr<Projection> gate_proj, up_proj, down_proj;
};

struct DecoderLayer : torch::nn::Module {
  explicit DecoderLayer(const ModelConfig& c);
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<Mlp> mlp;
  std::shared_ptr<RmsNorm> input_layernorm, post_attention_layernorm;
};

struct LlamaBody : torch::nn::Module {
  explicit LlamaBody(const ModelConfig& c);
  torch::nn::Embedding embed_tokens{nullptr};
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  std::shared_ptr<RmsNorm> norm;
};

class LlamaModel : public torch::nn::Module {
 public:
  // Weight matrices and embeddings start uninitialised (norms at one): load a
  // checkpoint into them or initialise them before use.
  explicit LlamaModel(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // For inference: concatenates q/k/v and gate/up weights so each layer runs two
  // projections fewer (the per-op overhead dominates small models on CPU). Call after
  // the weights are final; the parameters keep their names and values.
  void fuse_projections();
  int64_t parameter_count() const;

  // Full-sequence causal forward with no cache (training, reference checks):
  // tokens [B, T] -> logits [B, T, vocab].
  at::Tensor forward_full(const at::Tensor& tokens);

  // Incremental forward through the cache: writes each row's K/V after what its slot
  // holds, advances the slot lengths, returns logits [B, T, vocab] (all_positions; rows
  // past lengths[b] are garbage) or [B, vocab] at each row's last valid token.
  at::Tensor forward(const ForwardBatch& batch, KvCache& cache, LogitsFor which);

 private:
  at::Tensor logits_from_hidden(const at::Tensor& hidden);
  struct Step;  // per-call state shared by every layer (RoPE tables, mask, cache rows)
  at::Tensor run_layers(at::Tensor x, const Step& step);
  at::Tensor attention(int32_t layer, const at::Tensor& x, const Step& step);

  ModelConfig config_;
  std::shared_ptr<LlamaBody> model_;
  std::shared_ptr<Projection> lm_head_;  // absent when embeddings are tied
  at::Tensor inv_freq_;                 // [head_dim / 2]
  std::vector<at::Tensor> fused_qkv_;   // per layer, empty until fuse_projections()
  std::vector<at::Tensor> fused_gate_up_;
};

// x [..., in] times weight [out, in] transposed. One to three rows (decode) run as
// matrix-vector products: OpenBLAS 0.3.21's sgemm packs the whole weight even for one
// row and read it 3-4x slower than sgemv on this machine.
at::Tensor project(const at::Tensor& x, const at::Tensor& weight);

// Inverse RoPE frequencies for a config, including llama3 rope_scaling.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);

}  // namespace specd
