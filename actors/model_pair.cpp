#include "actors/model_pair.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/speculation/draft_compat.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd::actors {

namespace {

void check_config(const EngineConfig& c) {
  auto positive = [](int64_t v, const char* name) {
    if (v < 1) throw SpecdError(ErrorCode::invalid_argument, std::string("engine config: ") + name + " must be >= 1");
  };
  positive(c.max_batch, "max_batch");
  positive(c.max_waiting, "max_waiting");
  positive(c.burst_queue, "burst_queue");
  positive(c.trace_capacity, "trace_capacity");
  positive(c.grammar_cache_memory, "grammar_cache_memory");
  auto non_negative = [](int64_t v, const char* name) {
    if (v < 0) throw SpecdError(ErrorCode::invalid_argument, std::string("engine config: ") + name + " must be >= 0");
  };
  non_negative(c.sequence.max_seq_len, "max_seq_len");
  non_negative(c.threads, "threads");
  non_negative(c.prefill_chunk, "prefill_chunk");
  non_negative(c.target_threads, "target_threads");
  non_negative(c.draft_threads, "draft_threads");
  non_negative(c.kv_cache_memory, "kv_cache_memory");
  positive(c.kv_block_size, "kv_block_size");
  if (c.sequence.k_max < 0) throw SpecdError(ErrorCode::invalid_argument, "engine config: k_max must be >= 0");
  if (!(c.prefill_slowdown == 0 || c.prefill_slowdown > 1)) {
    throw SpecdError(ErrorCode::invalid_argument, "engine config: prefill_slowdown must be 0 (off) or > 1");
  }
}

// A cache longer than a model's max_position_embeddings would feed it positions it was
// never trained on (and its RoPE tables may not reach): clamp, and say so. 0 (the
// default) takes the models' positions, as many as the KV budget holds for one request.
// Returns the start-up line's words on where the value came from.
std::string resolve_max_seq_len(EngineConfig& c, const LlamaModel& target, const LlamaModel* draft,
                                const KvBudgetInput& kv) {
  int64_t limit = target.config().max_position_embeddings;
  if (draft) limit = std::min<int64_t>(limit, draft->config().max_position_embeddings);
  if (limit <= 0) limit = std::numeric_limits<int64_t>::max();  // positions without a stated bound
  if (c.sequence.max_seq_len > 0) {
    if (c.sequence.max_seq_len <= limit) return "configured";
    std::fprintf(stderr, "specd: max_seq_len %lld exceeds the models' max_position_embeddings; using %lld\n",
                 static_cast<long long>(c.sequence.max_seq_len), static_cast<long long>(limit));
    c.sequence.max_seq_len = limit;
    return "configured, capped at the models' max_position_embeddings";
  }
  // What plan_kv_budget can hold for one request: its blocks, less the rows a verify
  // pass writes past the end.
  const int64_t block_bytes = (kv.target_bytes_per_token + kv.draft_bytes_per_token) * kv.block_size;
  const int64_t budget = kv.configured_bytes > 0 ? kv.configured_bytes : kv.available_bytes / 2;
  const int64_t fits = block_bytes > 0 ? budget / block_bytes * kv.block_size - c.sequence.k_max - 1 : limit;
  c.sequence.max_seq_len = std::max<int64_t>(1, std::min(limit, fits));
  return fits < limit ? "the models' max_position_embeddings " + std::to_string(limit) + ", bounded by the KV budget"
                      : "the models' max_position_embeddings";
}

// The matrices' dtypes, most common first, with their counts when they differ (a
// llama-quantize preset mixes them: "q4_k x148, q6_k x31").
std::string dtype_mix(const InferenceWeights& w) {
  std::map<std::string, int> counts;
  auto add = [&](const kernels::PackedWeight& m) {
    if (!m.stacked()) counts[kernels::dtype_name(m.dtype())] += 1;
    for (const kernels::PackedWeight& part : m.parts()) counts[kernels::dtype_name(part.dtype())] += 1;
  };
  for (const auto& layer : w.layers) {
    for (const kernels::PackedWeight* m : {&layer.qkv, &layer.o, &layer.gate_up, &layer.down}) add(*m);
  }
  add(w.head());
  if (counts.size() == 1) return counts.begin()->first;
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [name, n] : counts) sorted.emplace_back(-n, name);
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [n, name] : sorted) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(-n);
  return out;
}

std::string describe_weights(const LlamaModel& model, WeightFormat format) {
  const InferenceWeights& w = *model.inference_weights();
  char gb[32];
  std::snprintf(gb, sizeof gb, "%.2f GB ", static_cast<double>(w.bytes()) / 1e9);
  // As stored: what the checkpoint holds (f16, bf16, or a GGUF file's blocks).
  if (format == WeightFormat::stored) return gb + std::string("stored ") + dtype_mix(w);
  return gb + std::string(weight_format_name(format));
}

}  // namespace

LoadedPair load_pair(EngineConfig c) {
  check_config(c);
  LoadedPair p{.config = std::move(c)};
  const EngineConfig& config = p.config;
  p.tokenizer = load_tokenizer(config.target_dir);
  p.target = load_model(config.target_dir, config.target_weights);
  if (p.tokenizer->vocab_size() > p.target->config().vocab_size) {
    throw SpecdError(ErrorCode::bad_value, config.target_dir.string() + ": tokenizer vocabulary (" +
                                               std::to_string(p.tokenizer->vocab_size()) + ") exceeds the model's (" +
                                               std::to_string(p.target->config().vocab_size) + ")");
  }
  if (!config.draft_dir.empty()) {
    p.draft = load_model(config.draft_dir, config.draft_weights);
    check_draft_compatible(config.target_dir, p.target->config(), *p.tokenizer, config.draft_dir, p.draft->config(),
                           *load_tokenizer(config.draft_dir));
  }
  // After the weights: what memory is left is what the derived budget shares out.
  KvBudgetInput kv{.configured_bytes = config.kv_cache_memory,
                   .available_bytes = config.kv_cache_memory > 0 ? 0 : memory_available_bytes(),
                   .target_bytes_per_token = KvCache::bytes_per_token(p.target->config()),
                   .draft_bytes_per_token = p.draft ? KvCache::bytes_per_token(p.draft->config()) : 0,
                   .block_size = config.kv_block_size,
                   .max_batch = config.max_batch,
                   .sequence = config.sequence};
  const std::string origin = resolve_max_seq_len(p.config, *p.target, p.draft.get(), kv);
  kv.sequence = config.sequence;
  p.context_summary = "max_seq_len " + std::to_string(config.sequence.max_seq_len) + " (" + origin + ")";
  p.kv = plan_kv_budget(kv);
  p.kv_summary = describe(p.kv, kv, config.prefix_cache);
  p.weights_summary = "target " + describe_weights(*p.target, config.target_weights);
  if (p.draft) p.weights_summary += ", draft " + describe_weights(*p.draft, config.draft_weights);
  return p;
}

}  // namespace specd::actors
