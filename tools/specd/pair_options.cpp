#include "tools/specd/pair_options.hpp"

#include <algorithm>
#include <optional>

#include "compute/compute_threads.hpp"
#include "engine/base/byte_size.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace fs = std::filesystem;

constexpr int32_t kMaxK = 16;

std::string mode_description(const SpecSettings& spec) {
  if (!spec.enabled) return "target-only";
  const std::string k = spec.adaptive ? "auto" : std::to_string(spec.k);
  const std::string tree = spec.tree.mode == TreeMode::off ? "" : ", tree " + tree_settings_name(spec.tree);
  return std::string("speculative, drafter ") + drafter_name(spec.drafter) + ", k " + k + tree;
}

void parse_k(const std::string& text, SpecSettings& spec) {
  if (text == "auto") {
    spec.adaptive = true;
    return;
  }
  int k = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec != std::errc() || end != text.data() + text.size() || k < 1 || k > kMaxK) {
    throw CLI::ValidationError("--k",
                               "expected an integer in 1.." + std::to_string(kMaxK) + " or 'auto', got '" + text + "'");
  }
  spec.k = k;
  spec.adaptive = false;
}

void add_pair_options(CLI::App& cmd, PairArgs& a) {
  cmd.add_option("--model", a.model, "target model directory (default: the committed target)");
  cmd.add_option("--draft", a.draft, "draft model directory (default: the committed draft with the default target)");
  cmd.add_option("--k", a.k, "drafted tokens per round, 1..16, or 'auto'")->capture_default_str();
  cmd.add_option("--drafter", a.drafter, "model or lookup (prompt lookup, no draft model)")
      ->capture_default_str()
      ->check(CLI::IsMember({"model", "lookup"}));
  cmd.add_option("--tree", a.tree,
                 "token trees: off (a chain of K), auto (the planner chooses each round from measured costs), or "
                 "children per depth such as 3,2,1 (its depth replaces K)")
      ->capture_default_str();
  cmd.add_flag("--no-spec", a.no_spec, "target-only generation");
  add_max_seq_len_option(cmd, a.max_seq_len);
  cmd.add_option("--kv-cache-memory", a.kv_cache_memory,
                 "bytes of KV blocks for both models, such as 4GiB (default: half the memory left after the weights)");
  add_weight_options(cmd, a.weights, a.draft_weights);
  add_chat_template_option(cmd, a.chat_template);
  cmd.add_option("--threads", a.threads,
                 "compute threads (0: the CPUs this process may use, affinity and cgroup quota)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
}

void add_max_seq_len_option(CLI::App& cmd, int64_t& max_seq_len) {
  cmd.add_option("--max-seq-len", max_seq_len,
                 "positions per sequence, prompt plus generated tokens; 0: the model's max_position_embeddings "
                 "(GGUF context_length), bounded by the KV budget")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
}

void add_chat_template_option(CLI::App& cmd, std::string& file) {
  cmd.add_option("--chat-template", file,
                 "a Jinja chat template file in place of the model's own (chat_template.jinja, "
                 "tokenizer_config.json, GGUF metadata)");
}

void add_weight_options(CLI::App& cmd, std::string& weights, std::string& draft_weights) {
  const auto formats = CLI::IsMember({"stored", "int8", "int4"});
  cmd.add_option("--weights", weights,
                 "stored keeps the checkpoint's weights as they are; int8 or int4 quantizes float ones at load "
                 "(Q8_0, Q4_0 blocks)")
      ->capture_default_str()
      ->check(formats);
  cmd.add_option("--draft-weights", draft_weights, "the draft's weights (default: as --weights)")->check(formats);
}

WeightFormat weight_format_of(const std::string& text) {
  return parse_weight_format(text).value_or(WeightFormat::stored);
}

ThreadPolicy apply_cli_thread_policy(int threads) {
  // One thread of control runs the draft and the target in turn: one lane's policy.
  ThreadPolicy policy = choose_thread_policy({threads, 0, 0, false, threads > 0 ? "--threads" : "auto"});
  limit_library_thread_pools();
  // This (main) thread's compute threads, for the life of the process.
  static ComputeThreadScope compute(policy.target_threads);
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

PairChoice choose_pair(const PairArgs& a) {
  PairChoice p;
  parse_k(a.k, p.spec);
  std::string error;
  const std::optional<TreeSettings> tree = parse_tree_settings(a.tree, error);
  if (!tree) throw CLI::ValidationError("--tree", error);
  p.spec.tree = *tree;
  p.spec.drafter = a.drafter == "lookup" ? DrafterKind::lookup : DrafterKind::model;
  const bool default_target =
      a.model.empty() || fs::weakly_canonical(a.model) == fs::weakly_canonical(default_target_dir());
  p.engine.target_dir = a.model.empty() ? default_target_dir() : fs::path(a.model);
  if (!a.no_spec && p.spec.drafter == DrafterKind::model) {
    if (!a.draft.empty()) {
      p.engine.draft_dir = a.draft;
    } else if (default_target) {
      p.engine.draft_dir = default_models_dir() / "draft";
    }
  }
  p.spec.enabled = !a.no_spec && (p.spec.drafter == DrafterKind::lookup || !p.engine.draft_dir.empty());
  p.engine.target_weights = weight_format_of(a.weights);
  p.engine.draft_weights = weight_format_of(a.draft_weights.empty() ? a.weights : a.draft_weights);
  p.engine.chat_template = a.chat_template;
  p.engine.sequence.max_seq_len = a.max_seq_len;
  if (!a.kv_cache_memory.empty()) p.engine.kv_cache_memory = parse_byte_size(a.kv_cache_memory, "--kv-cache-memory");
  p.engine.threads = a.threads;
  // A fixed --k or tree depth above the default.
  p.engine.sequence.k_max =
      std::max({p.engine.sequence.k_max, p.spec.k, static_cast<int32_t>(p.spec.tree.widths.size())});
  // One request at a time: a few slots, and the planner's costs measured only when K or
  // the tree is planned (calibration takes a second per lane).
  p.engine.max_batch = 4;
  const bool planned = p.spec.adaptive || p.spec.tree.mode == TreeMode::automatic;
  p.engine.calibration_seconds = p.spec.enabled && planned ? 1.0 : 0.0;
  return p;
}

}  // namespace specd::cli
