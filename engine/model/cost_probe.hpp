#pragma once
// Measures what a model costs on this machine: the mean wall time of a single-sequence,
// single-token decode step (the c of speculative decoding is draft / target of this).
#include <cstdint>

namespace specd {

class LlamaModel;

// Seconds per decode step: the median over 7 runs of `steps` steps each, after a short
// prompt and a warm-up.
double measure_decode_step_seconds(LlamaModel& model, int32_t steps = 64, int64_t context = 32);

}  // namespace specd
