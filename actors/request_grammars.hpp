#pragma once
// RequestGrammars: the engine's compiled grammars. A request's grammar is compiled once
// per text (cached by GrammarCache, budgeted in bytes) against the target's vocabulary,
// which is built on the first request that has a grammar: its trie costs start-up time
// that free-text servers need not pay. Compiles run on one thread of their own, so no
// caller's thread (a gateway io thread) waits for a schema's precomputation.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/grammar/grammar_cache.hpp"
#include "engine/request/generate_request.hpp"

namespace specd {
class Tokenizer;
}

namespace specd::actors {

class RequestGrammars {
 public:
  // `tokenizer` outlives this object; `memory`: the cache's budget in bytes.
  RequestGrammars(const Tokenizer& tokenizer, std::filesystem::path target_dir, int64_t memory);

  // The grammar when it is free text (null) or already compiled: no compile, any thread.
  std::optional<std::shared_ptr<const grammar::CompiledGrammar>> ready(const OutputGrammar& g) const;
  // Compiles (or finds) the grammar; throws SpecdError bad_value naming what the grammar
  // engine cannot handle. Called on the compile thread (it may take a second).
  std::shared_ptr<const grammar::CompiledGrammar> compile(const OutputGrammar& g);
  // Runs `job` on the compile thread.
  template <class Job>
  void post(Job&& job) {
    boost::asio::post(thread_, std::forward<Job>(job));
  }
  // Waits for the compile thread's jobs; they may hold the engine, so it ends first.
  void join() { thread_.join(); }

 private:
  const Tokenizer& tokenizer_;
  const std::filesystem::path target_dir_;
  const int64_t memory_;
  std::once_flag setup_;
  std::unique_ptr<grammar::GrammarCache> cache_;
  std::atomic<grammar::GrammarCache*> cache_ready_{nullptr};  // `cache_` once set up
  boost::asio::thread_pool thread_{1};
};

}  // namespace specd::actors
