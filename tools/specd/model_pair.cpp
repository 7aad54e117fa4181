#include "tools/specd/model_pair.hpp"

#include <ATen/Parallel.h>

#include "engine/checkpoint.hpp"
#include "engine/kernels/kernel_threads.hpp"
#include "engine/draft_compat.hpp"
#include "engine/errors.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_model.hpp"
#include "engine/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace fs = std::filesystem;

constexpr int32_t kMaxK = 16;

ModelPair::ModelPair() = default;
ModelPair::~ModelPair() = default;
ModelPair::ModelPair(ModelPair&&) noexcept = default;

SpecModels ModelPair::models() {
  return SpecModels{*target, *target_cache, draft.get(), draft_cache.get()};
}

std::string ModelPair::mode_description() const {
  if (!spec.enabled) return "target-only";
  const std::string k = spec.adaptive ? "auto" : std::to_string(spec.k);
  return std::string("speculative, drafter ") + drafter_name(spec.drafter) + ", k " + k;
}

void parse_k(const std::string& text, SpecSettings& spec) {
  if (text == "auto") {
    spec.adaptive = true;
    return;
  }
  int k = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec != std::errc() || end != text.data() + text.size() || k < 1 || k > kMaxK) {
    throw CLI::ValidationError("--k", "expected an integer in 1.." + std::to_string(kMaxK) + " or 'auto', got '" + text + "'");
  }
  spec.k = k;
  spec.adaptive = false;
}

void add_pair_options(CLI::App& cmd, PairArgs& a) {
  cmd.add_option("--model", a.model, "target model directory (default: the committed target)");
  cmd.add_option("--draft", a.draft, "draft model directory (default: the committed draft with the default target)");
  cmd.add_option("--k", a.k, "drafted tokens per round, 1..16, or 'auto'")->capture_default_str();
  cmd.add_option("--drafter", a.drafter, "model or lookup (prompt lookup, no draft model)")
      ->capture_default_str()->check(CLI::IsMember({"model", "lookup"}));
  cmd.add_flag("--no-spec", a.no_spec, "target-only generation");
  cmd.add_option("--max-seq-len", a.max_seq_len, "KV cache length per sequence")
      ->capture_default_str()->check(CLI::Range(2, 1 << 20));
  cmd.add_option("--threads", a.threads, "compute threads (0: the CPUs this process may use, affinity and cgroup quota)")
      ->capture_default_str()->check(CLI::Range(0, 256));
}

ThreadPolicy apply_cli_thread_policy(int threads) {
  // One thread of control runs the draft and the target in turn: one lane's policy.
  ThreadPolicy policy = choose_thread_policy({threads, 0, 0, false, threads > 0 ? "--threads" : "auto"});
  limit_library_thread_pools();
  // The kernels' threads for this (main) thread, for the life of the process; libtorch's
  // remaining ops (sampling) stay on one thread.
  static kernels::KernelThreads pool(policy.target_threads);
  kernels::KernelThreads::set_current(&pool);
  at::set_num_threads(1);
  return policy;
}

boost::json::object threads_json(const ThreadPolicy& p) {
  boost::json::object out{{"usable_cpus", p.limits.usable()},
                          {"affinity_cpus", p.limits.affinity_cpus},
                          {"cpu_quota", nullptr},
                          {"budget", p.budget},
                          {"target", p.target_threads},
                          {"draft", p.draft_threads},
                          {"origin", p.origin}};
  if (p.limits.quota_cpus) out["cpu_quota"] = *p.limits.quota_cpus;
  return out;
}

ModelPair load_pair(const PairArgs& a) {
  ModelPair p;
  p.threads = apply_cli_thread_policy(a.threads);
  parse_k(a.k, p.spec);
  p.spec.drafter = a.drafter == "lookup" ? DrafterKind::lookup : DrafterKind::model;
  const bool default_target = a.model.empty() || fs::weakly_canonical(a.model) == fs::weakly_canonical(default_target_dir());
  p.target_dir = a.model.empty() ? default_target_dir() : fs::path(a.model);
  if (!a.no_spec && p.spec.drafter == DrafterKind::model) {
    if (!a.draft.empty()) {
      p.draft_dir = a.draft;
    } else if (default_target) {
      p.draft_dir = default_models_dir() / "draft";
    }
  }
  p.spec.enabled = !a.no_spec && (p.spec.drafter == DrafterKind::lookup || !p.draft_dir.empty());
  p.tokenizer = load_tokenizer(p.target_dir);
  p.target = load_model(p.target_dir);
  if (p.tokenizer->vocab_size() > p.target->config().vocab_size) {
    throw SpecdError(ErrorCode::bad_value, p.target_dir.string() + ": tokenizer vocabulary (" +
                                               std::to_string(p.tokenizer->vocab_size()) + ") exceeds the model's (" +
                                               std::to_string(p.target->config().vocab_size) + ")");
  }
  const int64_t max_seq = std::min<int64_t>(a.max_seq_len, p.target->config().max_position_embeddings);
  p.target_cache = std::make_unique<KvCache>(p.target->config(), a.slots, max_seq);
  if (!p.draft_dir.empty()) {
    p.draft = load_model(p.draft_dir);
    check_draft_compatible(p.target_dir, p.target->config(), *p.tokenizer, p.draft_dir, p.draft->config(),
                           *load_tokenizer(p.draft_dir));
    p.draft_cache = std::make_unique<KvCache>(p.draft->config(), a.slots,
                                              std::min<int64_t>(max_seq, p.draft->config().max_position_embeddings));
  }
  return p;
}

}  // namespace specd::cli
