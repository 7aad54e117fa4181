#include "engine/grammar/grammar_cache.hpp"

#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace specd::grammar {

std::shared_ptr<const CompiledGrammar> compile_grammar(GrammarKind kind, std::string_view text,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary) {
  ByteGrammar grammar = kind == GrammarKind::gbnf          ? compile_gbnf(text)
                        : kind == GrammarKind::json_schema ? compile_json_schema(text)
                                                           : any_json_object_grammar();
  return std::make_shared<const CompiledGrammar>(std::make_shared<const ByteGrammar>(std::move(grammar)),
                                                 std::move(vocabulary));
}

GrammarCache::GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity)
    : vocabulary_(std::move(vocabulary)), capacity_(capacity == 0 ? 1 : capacity) {}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(GrammarKind kind, std::string_view text) {
  std::string key(1, static_cast<char>('0' + static_cast<int>(kind)));
  if (kind != GrammarKind::any_json_object) key.append(text);
  {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  std::shared_ptr<const CompiledGrammar> compiled = compile_grammar(kind, text, vocabulary_);
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

size_t GrammarCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

size_t GrammarCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace specd::grammar
