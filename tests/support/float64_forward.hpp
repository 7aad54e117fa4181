#pragma once
// An independent float64 forward of the architectures specd runs (Llama, Qwen2's q/k/v
// biases, Qwen3's per-head q/k RMSNorm before RoPE), written from the Hugging Face
// modelling code rather than from specd's forward: plain loops over doubles, the whole
// sequence recomputed for every token (no KV cache, no kernels, no libtorch). Slow; for
// the tiny fixture models only. Its greedy ids check the native forward's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_files.hpp"

namespace specd::testing {

class Float64Forward {
 public:
  explicit Float64Forward(const std::filesystem::path& dir)
      : c_(load_model_config(dir / "config.json")), files_(WeightFiles::open(dir)) {
    if (c_.rope_scaling) throw std::invalid_argument("Float64Forward: rope_scaling is not written here");
  }

  const ModelConfig& config() const { return c_; }

  // Greedy continuation of `prompt`: up to max_tokens ids, ending after an EOS id if one comes.
  std::vector<int32_t> greedy(std::vector<int32_t> ids, int max_tokens, int32_t eos) {
    std::vector<int32_t> out;
    while (static_cast<int>(out.size()) < max_tokens) {
      const std::vector<double> logits = last_logits(ids);
      const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.push_back(next);
      ids.push_back(next);
      if (next == eos) break;
    }
    return out;
  }

  // Logits after the last of `ids`.
  std::vector<double> last_logits(const std::vector<int32_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size()), h = c_.hidden_size;
    std::vector<double> x(n * h);
    const std::vector<double>& embed = w("model.embed_tokens.weight");
    for (int64_t t = 0; t < n; ++t) std::copy_n(embed.begin() + ids[t] * h, h, x.begin() + t * h);
    for (int64_t l = 0; l < c_.num_hidden_layers; ++l) layer(l, x, n);
    const std::vector<double> last = rms(std::vector<double>(x.end() - h, x.end()), w("model.norm.weight"));
    const std::vector<double>& head = w(c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    return matvec(head, last, c_.vocab_size);
  }

 private:
  const std::vector<double>& w(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    const TensorView& view = files_.tensor(name);
    int64_t n = 1;
    for (int64_t d : view.shape) n *= d;
    std::vector<float> f(n);
    convert_to_float32(view, f.data());
    return cache_[name] = std::vector<double>(f.begin(), f.end());
  }

  std::vector<double> rms(const std::vector<double>& v, const std::vector<double>& weight) const {
    double ss = 0;
    for (double a : v) ss += a * a;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(v.size()) + c_.rms_norm_eps);
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] * inv * weight[i];
    return out;
  }

  // m [rows, in] times v.
  static std::vector<double> matvec(const std::vector<double>& m, const std::vector<double>& v, int64_t rows) {
    const int64_t in = static_cast<int64_t>(v.size());
    std::vector<double> out(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += m[r * in + i] * v[i];
      out[r] = s;
    }
    return out;
  }

  std::vector<double> project(const std::string& name, const std::vector<double>& v, int64_t rows, bool bias) {
    std::vector<double> out = matvec(w(name + ".weight"), v, rows);
    if (bias) {
      const std::vector<double>& b = w(name + ".bias");
      for (int64_t r = 0; r < rows; ++r) out[r] += b[r];
    }
    return out;
  }

  // One head in place: the optional Qwen3 norm, then RoPE on (i, i + d/2) pairs at `pos`.
  void head_in_place(double* v, int64_t pos, const std::vector<double>* norm) const {
    const int64_t d = c_.head_dim, half = d / 2;
    if (norm) {
      std::vector<double> normed = rms(std::vector<double>(v, v + d), *norm);
      std::copy(normed.begin(), normed.end(), v);
    }
    for (int64_t i = 0; i < half; ++i) {
      const double inv = 1.0 / std::pow(c_.rope_theta, static_cast<double>(2 * i) / static_cast<double>(d));
      const double angle = static_cast<double>(pos) * inv, a = v[i], b = v[i + half];
      v[i] = a * std::cos(angle) - b * std::sin(angle);
      v[i + half] = b * std::cos(angle) + a * std::sin(angle);
    }
  }

  void layer(int64_t l, std::vector<double>& x, int64_t n) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const int64_t h = c_.hidden_size, d = c_.head_dim, heads = c_.num_attention_heads, kvh = c_.num_key_value_heads;
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<double> xn =
          rms(std::vector<double>(x.begin() + t * h, x.begin() + (t + 1) * h), w(p + "input_layernorm.weight"));
      q[t] = project(p + "self_attn.q_proj", xn, heads * d, c_.qkv_bias);
      k[t] = project(p + "self_attn.k_proj", xn, kvh * d, c_.qkv_bias);
      v[t] = project(p + "self_attn.v_proj", xn, kvh * d, c_.qkv_bias);
      const std::vector<double>* qn = c_.qk_norm ? &w(p + "self_attn.q_norm.weight") : nullptr;
      const std::vector<double>* kn = c_.qk_norm ? &w(p + "self_attn.k_norm.weight") : nullptr;
      for (int64_t i = 0; i < heads; ++i) head_in_place(q[t].data() + i * d, t, qn);
      for (int64_t i = 0; i < kvh; ++i) head_in_place(k[t].data() + i * d, t, kn);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> attn(heads * d, 0.0);
      for (int64_t i = 0; i < heads; ++i) {
        const int64_t g = i / (heads / kvh);  // the KV head of query head i
        std::vector<double> scores(t + 1);
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t j = 0; j < d; ++j) dot += q[t][i * d + j] * k[s][g * d + j];
          scores[s] = dot / std::sqrt(static_cast<double>(d));
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& e : scores) sum += (e = std::exp(e - top));
        for (int64_t s = 0; s <= t; ++s)
          for (int64_t j = 0; j < d; ++j) attn[i * d + j] += scores[s] / sum * v[s][g * d + j];
      }
      const std::vector<double> o = matvec(w(p + "self_attn.o_proj.weight"), attn, h);
      for (int64_t i = 0; i < h; ++i) x[t * h + i] += o[i];
      const std::vector<double> xn = rms(std::vector<double>(x.begin() + t * h, x.begin() + (t + 1) * h),
                                         w(p + "post_attention_layernorm.weight"));
      const int64_t inter = c_.intermediate_size;
      const std::vector<double> gate = matvec(w(p + "mlp.gate_proj.weight"), xn, inter);
      std::vector<double> up = matvec(w(p + "mlp.up_proj.weight"), xn, inter);
      for (int64_t i = 0; i < inter; ++i) up[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
      const std::vector<double> down = matvec(w(p + "mlp.down_proj.weight"), up, h);
      for (int64_t i = 0; i < h; ++i) x[t * h + i] += down[i];
    }
  }

  ModelConfig c_;
  WeightFiles files_;
  std::map<std::string, std::vector<double>> cache_;
};

}  // namespace specd::testing
