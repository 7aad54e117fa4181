#pragma once
// The command line's model-pair options and the rules of `specd generate`: the default
// target pairs with the default draft; any other target runs target-only unless --draft
// or --drafter lookup is given. The models themselves are loaded and checked by the
// Engine (actors/engine.hpp), the one place that does it for the CLI and the server.
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <filesystem>
#include <string>

#include "actors/engine.hpp"
#include "compute/thread_policy.hpp"
#include "engine/request/spec_settings.hpp"

namespace specd::cli {

struct PairArgs {
  std::string model, draft, k = "4", drafter = "model", tree = "off";
  bool no_spec = false;
  int64_t max_seq_len = SequenceLimits{}.max_seq_len;
  int threads = 0;
  std::string kv_cache_memory;                    // empty: derived
  std::string weights = "stored", draft_weights;  // draft_weights empty: as weights
  std::string chat_template;                      // empty: the model's own
};

void add_pair_options(CLI::App& cmd, PairArgs& args);
// --weights and --draft-weights (stored, int8, int4), for the commands that load models
// without the other pair options (serve).
void add_weight_options(CLI::App& cmd, std::string& weights, std::string& draft_weights);
// --max-seq-len N, 0 (the default) taking it from the model (generate, bench, serve).
void add_max_seq_len_option(CLI::App& cmd, int64_t& max_seq_len);
// --chat-template FILE (generate, serve).
void add_chat_template_option(CLI::App& cmd, std::string& file);
// A checked option's value (add_weight_options validates it); draft_weights empty: as weights.
WeightFormat weight_format_of(const std::string& text);

// What the options select: the engine's models and the requests' speculation.
struct PairChoice {
  EngineConfig engine;  // target_dir, draft_dir (empty: none), weights, max_seq_len, threads
  SpecSettings spec;    // enabled == false: target-only
};
// Throws CLI::ValidationError for a bad --k or --tree.
PairChoice choose_pair(const PairArgs& args);

// "target-only" or "speculative, drafter model, k 4".
std::string mode_description(const SpecSettings& spec);

// The thread policy of the commands that compute on their own thread (the model and
// kernel benchmarks): chosen, applied to libtorch and OpenBLAS, returned.
ThreadPolicy apply_cli_thread_policy(int threads);
boost::json::object threads_json(const ThreadPolicy& policy);

// "4" -> fixed K 4; "auto" -> adaptive. Throws CLI::ValidationError otherwise.
void parse_k(const std::string& text, SpecSettings& spec);

}  // namespace specd::cli
