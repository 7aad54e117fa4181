#include "tools/train/lm_trainer.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>

#include "engine/model/llama_model.hpp"

namespace specd {

namespace {

using Clock = std::chrono::steady_clock;

// Windows of seq_len + 1 tokens (inputs and shifted targets); with a BOS id the input
// row is BOS followed by the window, matching how prompts are encoded.
std::pair<torch::Tensor, torch::Tensor> make_batch(const std::vector<int32_t>& ids, const std::vector<int64_t>& starts,
                                                   int64_t seq_len, int32_t bos_id) {
  const auto B = static_cast<int64_t>(starts.size());
  torch::Tensor inputs = torch::empty({B, seq_len}, torch::kLong);
  torch::Tensor targets = torch::empty({B, seq_len}, torch::kLong);
  auto in = inputs.accessor<int64_t, 2>();
  auto out = targets.accessor<int64_t, 2>();
  const int64_t shift = bos_id >= 0 ? 1 : 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      const int64_t src = starts[b] + t - shift;
      in[b][t] = src < starts[b] ? bos_id : ids[src];
      out[b][t] = ids[starts[b] + t + 1 - shift];
    }
  }
  return {inputs, targets};
}

double learning_rate_at(const TrainOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.learning_rate * static_cast<double>(step + 1) / o.warmup_steps;
  const double progress = static_cast<double>(step - o.warmup_steps) / std::max<int64_t>(1, o.steps - o.warmup_steps);
  const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * std::min(1.0, progress)));
  return o.learning_rate * (o.min_lr_ratio + (1 - o.min_lr_ratio) * cosine);
}

torch::Tensor loss_for(LlamaModel& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                       const TrainOptions& o) {
  torch::Tensor logits = model.forward_full(inputs);
  const int64_t V = logits.size(-1);
  torch::Tensor ce = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), targets.reshape({-1}));
  if (!o.teacher || o.distill_weight <= 0) return ce;
  torch::Tensor teacher_logp;
  {
    torch::NoGradGuard no_grad;
    teacher_logp = torch::log_softmax(o.teacher->forward_full(inputs), -1).reshape({-1, V});
  }
  torch::Tensor student_logp = torch::log_softmax(logits, -1).reshape({-1, V});
  torch::Tensor kl = (teacher_logp.exp() * (teacher_logp - student_logp)).sum(-1).mean();
  return (1 - o.distill_weight) * ce + o.distill_weight * kl;
}

}  // namespace

void init_weights(LlamaModel& model, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    if (item.value().dim() == 1) {
      item.value().fill_(1.0);
    } else {
      item.value().normal_(0.0, 0.02);
    }
  }
}

double validation_loss(LlamaModel& model, const std::vector<int32_t>& ids, int64_t seq_len, int64_t batches,
                       int64_t batch_size, int32_t bos_id) {
  torch::NoGradGuard no_grad;
  const int64_t span = seq_len + 1;
  const int64_t windows = static_cast<int64_t>(ids.size()) / span;
  const int64_t count = std::min(windows, batches * batch_size);
  double total = 0;
  int64_t done = 0;
  for (int64_t first = 0; first < count; first += batch_size) {
    std::vector<int64_t> starts;
    for (int64_t w = first; w < std::min(count, first + batch_size); ++w) starts.push_back(w * span);
    auto [inputs, targets] = make_batch(ids, starts, seq_len, bos_id);
    torch::Tensor logits = model.forward_full(inputs);
    total += torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}))
                 .item<double>() *
             static_cast<double>(starts.size());
    done += static_cast<int64_t>(starts.size());
  }
  return done ? total / static_cast<double>(done) : NAN;
}

TrainReport train_language_model(LlamaModel& model, const std::vector<int32_t>& train_ids,
                                 const std::vector<int32_t>& validation_ids, const TrainOptions& o) {
  model.train();
  if (o.teacher) o.teacher->eval();
  torch::optim::AdamW optimizer(
      model.parameters(), torch::optim::AdamWOptions(o.learning_rate).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(train_ids.size()) - o.seq_len - 2);
  TrainReport report;
  const auto t0 = Clock::now();
  double smoothed = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learning_rate_at(o, step));
    }
    std::vector<int64_t> starts(o.batch_size);
    for (auto& s : starts) s = pick(rng);
    auto [inputs, targets] = make_batch(train_ids, starts, o.seq_len, o.bos_id);
    optimizer.zero_grad();
    torch::Tensor loss = loss_for(model, inputs, targets, o);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model.parameters(), o.grad_clip);
    optimizer.step();
    const double value = loss.item<double>();
    smoothed = step == 0 ? value : 0.95 * smoothed + 0.05 * value;
    report.steps_done = step + 1;
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if ((step + 1) % o.log_every == 0 || step + 1 == o.steps) {
      const double tokens_per_s = static_cast<double>((step + 1) * o.batch_size * o.seq_len) / elapsed;
      const double eta = elapsed / static_cast<double>(step + 1) * static_cast<double>(o.steps - step - 1);
      std::printf("[%s] step %lld/%lld loss %.4f tokens/s %.0f elapsed %.0fs eta %.0fs\n", o.label.c_str(),
                  static_cast<long long>(step + 1), static_cast<long long>(o.steps), smoothed, tokens_per_s, elapsed,
                  eta);
      std::fflush(stdout);
    }
    if ((step + 1) % o.eval_every == 0) {
      model.eval();
      std::printf("[%s] step %lld validation loss %.4f\n", o.label.c_str(), static_cast<long long>(step + 1),
                  validation_loss(model, validation_ids, o.seq_len, o.eval_batches, o.batch_size, o.bos_id));
      std::fflush(stdout);
      model.train();
    }
    if (o.max_seconds > 0 && elapsed > o.max_seconds) {
      std::printf("[%s] stopping at step %lld: time budget of %.0fs reached\n", o.label.c_str(),
                  static_cast<long long>(step + 1), o.max_seconds);
      break;
    }
  }
  model.eval();
  report.final_train_loss = smoothed;
  report.validation_loss =
      validation_loss(model, validation_ids, o.seq_len, o.eval_batches * 4, o.batch_size, o.bos_id);
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return report;
}

}  // namespace specd
