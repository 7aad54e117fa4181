#pragma once
// The one loader of a model pair: an EngineConfig checked, its target, draft and
// tokenizer loaded and checked against each other, max_seq_len chosen (0: the models'
// max_position_embeddings, bounded by the KV budget) or capped at what both models' positions allow, the KV budget
// planned from what memory is left after the weights, and the start-up lines that say so. Called once, before any actor
// runs.
#include <memory>
#include <string>

#include "actors/engine_config.hpp"
#include "engine/planning/kv_budget.hpp"

namespace specd {
class LlamaModel;
class Tokenizer;
}  // namespace specd

namespace specd::actors {

struct LoadedPair {
  EngineConfig config;  // as given, with max_seq_len resolved and capped
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<LlamaModel> target, draft;  // draft: null without a draft model
  KvBudget kv;
  std::string kv_summary;       // the KV budget's start-up line
  std::string weights_summary;  // "target 1.59 GB int4, draft ..."
  std::string context_summary;  // "max_seq_len 1024 (the models' max_position_embeddings)"
};

// Throws SpecdError: invalid_argument for a bad configuration, bad_value for models that
// do not fit each other or a KV budget too small for one request, and the loaders' errors.
LoadedPair load_pair(EngineConfig config);

}  // namespace specd::actors
