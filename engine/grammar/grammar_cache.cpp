#include "engine/grammar/grammar_cache.hpp"

#include <string>

#include "engine/base/byte_size.hpp"
#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace specd::grammar {

std::shared_ptr<const CompiledGrammar> compile_grammar(GrammarKind kind, std::string_view text,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary) {
  ByteGrammar grammar = kind == GrammarKind::gbnf          ? compile_gbnf(text)
                        : kind == GrammarKind::json_schema ? compile_json_schema(text)
                                                           : any_json_object_grammar();
  auto compiled = std::make_shared<const CompiledGrammar>(std::make_shared<const ByteGrammar>(std::move(grammar)),
                                                          std::move(vocabulary));
  // Past the parse bound at its very start: a refusal now, not an error in the first round.
  GrammarMatcher start(compiled);
  TokenBitset mask;
  start.fill_mask(mask);
  if (start.too_ambiguous()) throw TooAmbiguous();
  return compiled;
}

namespace {

std::string cache_key(GrammarKind kind, std::string_view text) {
  std::string key(1, static_cast<char>('0' + static_cast<int>(kind)));
  if (kind != GrammarKind::any_json_object) key.append(text);
  return key;
}

}  // namespace

GrammarCache::GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t budget_bytes)
    : vocabulary_(std::move(vocabulary)), budget_(budget_bytes) {}

std::shared_ptr<const CompiledGrammar> GrammarCache::find(GrammarKind kind, std::string_view text) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(cache_key(kind, text));
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return it->second->grammar;
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(GrammarKind kind, std::string_view text) {
  std::string key = cache_key(kind, text);
  {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->grammar;
    }
    ++misses_;
  }
  std::shared_ptr<const CompiledGrammar> compiled = compile_grammar(kind, text, vocabulary_);
  const size_t bytes = compiled->bytes() + key.size();
  if (bytes > budget_) {
    throw SpecdError(ErrorCode::bad_value, "the compiled grammar takes " + format_bytes(static_cast<int64_t>(bytes)) +
                                               ", more than the whole grammar cache (" +
                                               format_bytes(static_cast<int64_t>(budget_)) +
                                               ", [engine] grammar_cache_memory)");
  }
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->grammar;
  while (!lru_.empty() && bytes_ + bytes > budget_) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front({std::move(key), compiled, bytes});
  index_[lru_.front().key] = lru_.begin();
  bytes_ += bytes;
  return compiled;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

size_t GrammarCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
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
