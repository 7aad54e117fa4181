#pragma once
// The Llama decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, optional tied
// embeddings; Qwen2's q/k/v biases and Qwen3's per-head q/k norms where the config has them) as a torch::nn::Module
// whose parameter names are exactly Hugging Face's
// (`model.layers.N.self_attn.q_proj.weight`, ...), so checkpoints load by name and the
// trainer's autograd runs on the same code. Not thread-safe: one lane drives a model.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/model/native_forward.hpp"

namespace specd {

class KvBlockPool;
class KvCache;
struct InferenceWeights;
struct KvTables;

// One call's batch: rows are right-padded to T tokens; row b has lengths[b] valid tokens
// and writes them into cache slot slots[b] at the positions after what the slot holds.
struct ForwardBatch {
  at::Tensor tokens;             // [B, T] int64
  std::vector<int32_t> slots;    // B cache slots
  std::vector<int64_t> lengths;  // B valid token counts, 1..T
};

enum class LogitsFor { all_positions, last_position };

// One slot's tokens in a pass that mixes kinds of rows (a round's verify rows and prompt
// chunks): written into the slot after what it holds; logits at every position or the
// last only.
struct ForwardSegment {
  std::span<const int32_t> tokens;
  int32_t slot = 0;
  LogitsFor logits = LogitsFor::all_positions;
  // A token tree's rows instead (verify passes; `tokens` unused): each with its own
  // position and slots, logits at every row, and no slot's length changed (the caller
  // keeps the accepted path's branch).
  std::span<const ForwardRow> tree = {};
};

// A linear layer, bias-free unless asked (Qwen2's q, k, v). Its weight starts
// uninitialised (a checkpoint load or the trainer sets it): torch::nn::Linear's random
// init took 9 s of a 1B model's load.
struct Projection : torch::nn::Module {
  Projection(int64_t in, int64_t out, bool with_bias = false);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out], or undefined
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
  std::shared_ptr<RmsNorm> q_norm, k_norm;  // Qwen3 only: over each head, before RoPE
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

// Two ways to hold the weights: as float32 torch parameters (training, reference checks,
// forward_full) and packed in their checkpoint dtype for the inference kernels
// (InferenceWeights; forward). A checkpoint loaded for inference has only the packed
// form; a model built in memory packs its parameters on its first forward.
class LlamaModel : public torch::nn::Module {
 public:
  // with_parameters: register float32 parameters (uninitialised: load a checkpoint into
  // them or initialise them before use); without, only use_inference_weights() gives the
  // model weights.
  explicit LlamaModel(const ModelConfig& config, bool with_parameters = true);
  ~LlamaModel() override;

  const ModelConfig& config() const { return config_; }
  bool has_parameters() const { return model_ != nullptr; }
  int64_t parameter_count() const;

  // Inference weights: given (a checkpoint's, packed at load), or packed from the float32
  // parameters as F32 (call again after changing them).
  void use_inference_weights(std::shared_ptr<const InferenceWeights> weights);
  const InferenceWeights* inference_weights() const;  // null until given or packed
  void pack_parameters_for_inference();
  // The inference passes' profile (ForwardRunner::set_profiling); needs the weights.
  ForwardRunner& runner();

  // Full-sequence causal forward with no cache on the float32 parameters (training,
  // reference checks): tokens [B, T] -> logits [B, T, vocab].
  at::Tensor forward_full(const at::Tensor& tokens);

  // Incremental forward through the cache on the inference weights: writes each row's
  // K/V after what its slot holds, advances the slot lengths, returns logits [B, T,
  // vocab] (all_positions; rows past lengths[b] are zero) or [B, vocab] at each row's
  // last valid token.
  at::Tensor forward(const ForwardBatch& batch, KvCache& cache, LogitsFor which);
  // The same for segments of different lengths and logits, in one pass over the weights:
  // logits [rows, vocab], each segment's (all its positions, or its last) in order.
  at::Tensor forward(std::span<const ForwardSegment> segments, KvCache& cache);
  // The same in the blocks of `tables` (which keep their lengths: the ledger's owner
  // applies the pass) over `storage`.
  at::Tensor forward(std::span<const ForwardSegment> segments, const KvTables& tables, KvBlockPool& storage);

 private:
  at::Tensor logits_from_hidden(const at::Tensor& hidden);
  struct Step;  // per-call state shared by every layer of forward_full (RoPE tables, mask)
  at::Tensor run_layers(at::Tensor x, const Step& step);
  at::Tensor attention(int32_t layer, const at::Tensor& x, const Step& step);

  ModelConfig config_;
  std::shared_ptr<LlamaBody> model_;       // null without parameters
  std::shared_ptr<Projection> lm_head_;    // absent when embeddings are tied
  at::Tensor inv_freq_;                    // [head_dim / 2]
  std::unique_ptr<ForwardRunner> runner_;  // the inference weights and the step's buffers
};

// Inverse RoPE frequencies for a config, including llama3 rope_scaling.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);

}  // namespace specd
