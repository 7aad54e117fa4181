#include "actors/request_grammars.hpp"

#include <boost/asio/post.hpp>

#include <pthread.h>

#include "engine/grammar/token_vocabulary.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd::actors {

namespace {

grammar::GrammarKind grammar_kind(OutputGrammar::Kind kind) {
  using Kind = OutputGrammar::Kind;
  return kind == Kind::gbnf          ? grammar::GrammarKind::gbnf
         : kind == Kind::json_schema ? grammar::GrammarKind::json_schema
                                     : grammar::GrammarKind::any_json_object;
}

}  // namespace

RequestGrammars::RequestGrammars(const Tokenizer& tokenizer, std::filesystem::path target_dir, int64_t memory)
    : tokenizer_(tokenizer), target_dir_(std::move(target_dir)), memory_(memory) {
  boost::asio::post(thread_, [] { pthread_setname_np(pthread_self(), "grammar"); });  // for top -H
}

std::optional<std::shared_ptr<const grammar::CompiledGrammar>> RequestGrammars::ready(const OutputGrammar& g) const {
  if (g.kind == OutputGrammar::Kind::none) return std::shared_ptr<const grammar::CompiledGrammar>{};
  grammar::GrammarCache* cache = cache_ready_.load();
  if (!cache) return std::nullopt;
  auto found = cache->find(grammar_kind(g.kind), g.text);
  if (!found) return std::nullopt;
  return found;
}

std::shared_ptr<const grammar::CompiledGrammar> RequestGrammars::compile(const OutputGrammar& g) {
  if (g.kind == OutputGrammar::Kind::none) return nullptr;
  std::call_once(setup_, [&] {
    const std::filesystem::path json = target_dir_ / "tokenizer.json";
    const std::vector<int32_t> specials = std::filesystem::is_regular_file(json)
                                              ? grammar::special_ids_from_tokenizer_json(json)
                                              : std::vector<int32_t>{};
    auto vocabulary =
        std::make_shared<const grammar::TokenVocabulary>(grammar::vocabulary_from_tokenizer(tokenizer_, specials));
    cache_ = std::make_unique<grammar::GrammarCache>(std::move(vocabulary), static_cast<size_t>(memory_));
    cache_ready_.store(cache_.get());
  });
  return cache_->get(grammar_kind(g.kind), g.text);
}

}  // namespace specd::actors
