#pragma once
// Compiled grammars by source text, so a schema that many requests send is compiled and
// precomputed once: a small LRU keyed by (kind, text), for one vocabulary. Thread-safe:
// requests on any strand may call get(); compilation runs outside the lock, and two
// callers racing on one new text both compile and the first insert wins. A text that
// does not compile throws (SpecdError bad_value) and is not cached.
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
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity);

  // `text` is the schema's JSON text or the GBNF text (ignored for any_json_object).
  std::shared_ptr<const CompiledGrammar> get(GrammarKind kind, std::string_view text);
  size_t size() const;
  size_t hits() const;
  size_t misses() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  size_t capacity_;
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
