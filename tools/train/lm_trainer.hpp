#pragma once
// Next-token training of a LlamaModel on a token stream with libtorch autograd:
// AdamW, warmup + cosine learning rate, gradient clipping, periodic validation and a
// progress line. Optionally distils a teacher's soft labels into the student.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace specd {

class LlamaModel;

struct TrainOptions {
  std::string label;  // shown in progress lines, e.g. "target"
  int64_t steps = 1000;
  int64_t batch_size = 16;
  int64_t seq_len = 128;
  double learning_rate = 1e-3;
  double min_lr_ratio = 0.1;
  int64_t warmup_steps = 100;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  int64_t eval_every = 200;
  int64_t eval_batches = 8;
  int64_t log_every = 20;
  uint64_t seed = 1234;
  int32_t bos_id = -1;  // when >= 0, every window starts with BOS, as prompts do
  // Distillation: loss = (1 - w) * CE(data) + w * KL(teacher || student).
  std::shared_ptr<LlamaModel> teacher;
  double distill_weight = 0.0;
  double max_seconds = 0;  // stop early past this wall time (0: no limit)
};

struct TrainReport {
  int64_t steps_done = 0;
  double final_train_loss = 0;
  double validation_loss = 0;
  double seconds = 0;
};

// Small-std normal init as in HF Llama (std 0.02), norms at one.
void init_weights(LlamaModel& model, uint64_t seed);

TrainReport train_language_model(LlamaModel& model, const std::vector<int32_t>& train_ids,
                                 const std::vector<int32_t>& validation_ids, const TrainOptions& options);

// Mean next-token cross-entropy over fixed windows of the validation stream.
double validation_loss(LlamaModel& model, const std::vector<int32_t>& ids, int64_t seq_len, int64_t batches,
                       int64_t batch_size, int32_t bos_id);

}  // namespace specd
