#pragma once
// Compiled grammars by source text, so a schema that many requests send is compiled and
// precomputed once: an LRU keyed by (kind, text), for one vocabulary, bounded in bytes
// (each entry's CompiledGrammar::bytes() plus its key's length). Thread-safe: requests on any
// strand may call get(); compilation runs outside the lock, and two callers racing on
// one new text both compile and the first insert wins. A text that does not compile
// throws (SpecdError bad_value) and is not cached; so does a grammar larger than the
// whole budget. A grammar evicted while requests use it lives on until they end.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/grammar/compiled_grammar.hpp"

namespace specd::grammar {

enum class GrammarKind { json_schema, gbnf, any_json_object };

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t budget_bytes);

  // `text` is the schema's JSON text or the GBNF text (ignored for any_json_object).
  std::shared_ptr<const CompiledGrammar> get(GrammarKind kind, std::string_view text);
  // The cached grammar (a hit, now the most recently used), or null without compiling:
  // the caller may then compile off its own thread with get(), which counts the miss.
  std::shared_ptr<const CompiledGrammar> find(GrammarKind kind, std::string_view text);
  size_t size() const;
  size_t bytes() const;  // of the cached entries, at most budget_bytes()
  size_t budget_bytes() const { return budget_; }
  size_t hits() const;
  size_t misses() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const CompiledGrammar> grammar;
    size_t bytes;
  };

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  size_t budget_;
  size_t bytes_ = 0;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t hits_ = 0;
  size_t misses_ = 0;
};

// Compiles without caching: the kind's parser, then the token precomputation.
std::shared_ptr<const CompiledGrammar> compile_grammar(GrammarKind kind, std::string_view text,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary);

}  // namespace specd::grammar
