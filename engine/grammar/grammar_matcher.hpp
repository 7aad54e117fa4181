#pragma once
// One request's position in a grammar: the stacks it may be in, advanced by the tokens
// the round commits, with a history for rollback. Owned by one request and touched only
// by whoever runs that request's round (not thread-safe; copyable, so a draft can run
// ahead on a copy).
//
// How the round uses it (one matcher per request):
// - Before sampling at a position: fill_mask(mask), then mask_logits(logits, mask)
//   (token_bitset.hpp: disallowed ids to -inf) before temperature, top-k/p and softmax. In a speculative round the
//   draft samples from its masked distribution and the matcher accepts each draft token as it is proposed; the target's
//   distribution at verify row i is masked with the mask after the first i draft tokens.
// - After verification: rollback(k - n) removes the k - n rejected draft tokens, then
//   accept_token(correction or bonus). accept_token returning false means a token the
//   mask forbids: a bug in the caller, never a model choice.
// - forced_token(): the one allowed id where the mask allows exactly one; appending it
//   without a model call changes nothing (greedy and sampled output alike), so it counts
//   as an accepted token. forced_bytes(): where the grammar admits one continuation, its
//   bytes up to the next choice; encoding and appending them (SGLang's jump-forward) saves
//   more model calls but picks a tokenization the model did not choose, so it is not exact.
// - An EOS id is allowed exactly when can_end(); accepting it terminates the matcher.
// - A grammar so ambiguous that it keeps more than StackStepper::kMaxParallelStacks parses
//   open: accept_* refuse, fill_mask allows nothing and forced_bytes is empty, and the
//   matcher remembers it (too_ambiguous()); so does every copy's shared flag
//   (copies_too_ambiguous()), which the owner of the original reads after a round ran on
//   copies on other threads. Nothing throws into the round: the scheduler ends that one
//   request with the error (advance_grammar, engine/speculation/speculative_round.hpp).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/byte_grammar.hpp"
#include "engine/grammar/compiled_grammar.hpp"
#include "engine/grammar/grammar_stacks.hpp"
#include "engine/grammar/token_bitset.hpp"

namespace specd::grammar {

class GrammarMatcher {
 public:
  // Bytes only (tests, documents): no vocabulary, so no masks or tokens.
  explicit GrammarMatcher(std::shared_ptr<const ByteGrammar> grammar);
  // Tokens and masks over the compiled grammar's vocabulary.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled);
  GrammarMatcher(const GrammarMatcher& other);
  GrammarMatcher& operator=(const GrammarMatcher& other);

  // Each successful call is one step for rollback; a refused one changes nothing.
  bool accept_bytes(std::string_view bytes);
  bool accept_token(int32_t id);
  void rollback(size_t steps);
  size_t steps() const { return history_.size() - 1; }

  // Allowed ids at the current state (EOS ids exactly when can_end()); the bitset is
  // resized to the vocabulary. After termination nothing is allowed.
  void fill_mask(TokenBitset& mask);
  bool can_end() const { return !terminated() && current().set.can_end; }
  bool is_terminated() const { return terminated(); }
  // The bytes every continuation starts with, up to the first choice (or max_bytes).
  std::string forced_bytes(size_t max_bytes = 256);
  // The only allowed id, if the mask (filled into `mask`) allows exactly one; else -1.
  int32_t forced_token(TokenBitset& mask);

  // A step of this matcher went past the parse bound (sticky; copies inherit it).
  bool too_ambiguous() const { return too_ambiguous_; }
  // This matcher or a copy of it (on any thread) went past the bound since the last
  // clear_copies_too_ambiguous(): a copy's path need not be this matcher's.
  bool copies_too_ambiguous() const { return copies_too_ambiguous_->load(std::memory_order_relaxed); }
  void clear_copies_too_ambiguous() { copies_too_ambiguous_->store(false, std::memory_order_relaxed); }
  // The refusal's text: "the grammar is too ambiguous: ...".
  static std::string too_ambiguous_message();

 private:
  struct Snapshot {
    StackSet set;
    size_t pool_size;
    bool terminated;
  };
  const Snapshot& current() const { return history_.back(); }
  bool terminated() const { return history_.back().terminated; }
  bool advance(std::string_view bytes, StackSet& out);
  void add_uncertain(const NodeTokenMask& node, int32_t stack, TokenBitset& mask);
  void fill_mask_stacks(TokenBitset& mask);
  // Runs `step`; past the parse bound undoes its stacks, remembers it and returns false.
  template <class Step>
  bool within_bound(const Step& step);

  std::shared_ptr<const ByteGrammar> grammar_;
  std::shared_ptr<const CompiledGrammar> compiled_;
  StackPool pool_;
  StackStepper stepper_;
  std::vector<Snapshot> history_;
  std::vector<StackSet> scratch_;  // per-depth states of a token walk
  TokenBitset one_stack_;
  bool too_ambiguous_ = false;
  std::shared_ptr<std::atomic<bool>> copies_too_ambiguous_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace specd::grammar
