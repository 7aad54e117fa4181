#include "engine/speculation/prefill.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/sampling/sampling.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

namespace {

// Right-padded [rows, longest] token batch; the model reads only `lengths` of each row.
at::Tensor padded_batch(const std::vector<std::span<const int32_t>>& rows) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  at::Tensor out = at::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, at::kLong);
  auto acc = out.accessor<int64_t, 2>();
  for (size_t b = 0; b < rows.size(); ++b) {
    for (size_t t = 0; t < rows[b].size(); ++t) acc[b][t] = rows[b][t];
  }
  return out;
}

}  // namespace

std::vector<int32_t> prefill_target(LlamaModel& target, KvCache& cache, std::span<SpecSequence* const> seqs) {
  if (seqs.empty()) return {};
  torch::InferenceMode inference;
  std::vector<std::span<const int32_t>> rows;
  std::vector<int32_t> slots;
  std::vector<int64_t> lengths;
  for (SpecSequence* s : seqs) {
    cache.set_length(s->target_slot, 0);
    rows.emplace_back(s->tokens);
    slots.push_back(s->target_slot);
    lengths.push_back(static_cast<int64_t>(s->tokens.size()));
  }
  at::Tensor logits = target.forward({padded_batch(rows), slots, lengths}, cache, LogitsFor::last_position);
  std::vector<int32_t> first;
  for (size_t b = 0; b < seqs.size(); ++b) {
    SpecSequence& s = *seqs[b];
    first.push_back(sample_token(logits[static_cast<int64_t>(b)], s.sampling, s.tokens, s.rng));
    s.tokens.push_back(first.back());
  }
  return first;
}

void prefill_draft(LlamaModel& draft, KvCache& cache, std::span<const DraftPrefill> prompts) {
  if (prompts.empty()) return;
  torch::InferenceMode inference;
  std::vector<std::span<const int32_t>> rows;
  std::vector<int32_t> slots;
  std::vector<int64_t> lengths;
  for (const DraftPrefill& p : prompts) {
    cache.set_length(p.draft_slot, 0);
    rows.push_back(p.prompt);
    slots.push_back(p.draft_slot);
    lengths.push_back(static_cast<int64_t>(p.prompt.size()));
  }
  draft.forward({padded_batch(rows), slots, lengths}, cache, LogitsFor::last_position);
}

}  // namespace specd
