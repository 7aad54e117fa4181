#pragma once
// Loading a target (and, for speculation, a draft) from the command line's options,
// with the rules of `specd generate`: the default target pairs with the default
// draft; any other target runs target-only unless --draft or --drafter lookup is given.
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <memory>
#include <string>

#include "engine/spec_generation.hpp"
#include "gpu/thread_policy.hpp"

namespace specd {
class KvCache;
class LlamaModel;
class Tokenizer;
}  // namespace specd

namespace specd::cli {

struct PairArgs {
  std::string model, draft, k = "4", drafter = "model";
  bool no_spec = false;
  int64_t max_seq_len = 1024;
  int32_t slots = 1;
  int threads = 0;
};

void add_pair_options(CLI::App& cmd, PairArgs& args);

struct ModelPair {
  std::filesystem::path target_dir, draft_dir;  // draft_dir empty without a draft model
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<LlamaModel> target, draft;
  std::unique_ptr<KvCache> target_cache, draft_cache;
  SpecSettings spec;  // enabled == false: target-only
  ThreadPolicy threads;

  SpecModels models();
  std::string mode_description() const;
  ~ModelPair();
  ModelPair();
  ModelPair(ModelPair&&) noexcept;
};

// The thread policy of the commands that compute on their own thread (generate, bench
// --spec, the model bench): chosen, applied to libtorch and OpenBLAS, returned.
ThreadPolicy apply_cli_thread_policy(int threads);
boost::json::object threads_json(const ThreadPolicy& policy);

// Throws SpecdError for a draft whose vocabulary or special ids differ from the target's.
ModelPair load_pair(const PairArgs& args);

// "4" -> fixed K 4; "auto" -> adaptive. Throws CLI::ValidationError otherwise.
void parse_k(const std::string& text, SpecSettings& spec);

}  // namespace specd::cli
