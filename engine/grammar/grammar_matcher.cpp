#include "engine/grammar/grammar_matcher.hpp"

#include <algorithm>
#include <bit>

#include "engine/base/errors.hpp"

namespace specd::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const ByteGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(*grammar_, pool_) {
  Snapshot start{{}, 0, false};
  stepper_.expand_one(pool_.push(grammar_->root_start(), kEmptyStack), start.set);
  start.pool_size = pool_.size();
  history_.push_back(std::move(start));
  scratch_.resize(2);
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled) : GrammarMatcher(compiled->grammar) {
  compiled_ = std::move(compiled);
  size_t longest = 0;
  for (const int32_t id : compiled_->vocabulary->sorted()) {
    longest = std::max(longest, compiled_->vocabulary->bytes(id).size());
  }
  scratch_.resize(longest + 1);
}

GrammarMatcher::GrammarMatcher(const GrammarMatcher& other)
    : grammar_(other.grammar_),
      compiled_(other.compiled_),
      pool_(other.pool_),
      stepper_(*grammar_, pool_),
      history_(other.history_),
      scratch_(other.scratch_.size()),
      too_ambiguous_(other.too_ambiguous_),
      copies_too_ambiguous_(other.copies_too_ambiguous_) {}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (this != &other) {
    grammar_ = other.grammar_;
    compiled_ = other.compiled_;
    pool_ = other.pool_;
    stepper_ = StackStepper(*grammar_, pool_);
    history_ = other.history_;
    scratch_.assign(other.scratch_.size(), {});
    too_ambiguous_ = other.too_ambiguous_;
    copies_too_ambiguous_ = other.copies_too_ambiguous_;
  }
  return *this;
}

std::string GrammarMatcher::too_ambiguous_message() { return TooAmbiguous().message(); }

template <class Step>
bool GrammarMatcher::within_bound(const Step& step) {
  try {
    step();
    return true;
  } catch (const TooAmbiguous&) {
    pool_.truncate(current().pool_size);
    too_ambiguous_ = true;
    copies_too_ambiguous_->store(true, std::memory_order_relaxed);
    return false;
  }
}

bool GrammarMatcher::advance(std::string_view bytes, StackSet& out) {
  out = current().set;
  StackSet next;
  for (const char c : bytes) {
    if (!stepper_.step(out, static_cast<uint8_t>(c), next).consumed) return false;
    std::swap(out, next);
  }
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated()) return false;
  StackSet next;
  bool consumed = false;
  if (!within_bound([&] { consumed = advance(bytes, next); })) return false;
  if (!consumed) {
    pool_.truncate(current().pool_size);
    return false;
  }
  history_.push_back(Snapshot{std::move(next), pool_.size(), false});
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  if (!compiled_) throw SpecdError(ErrorCode::invalid_argument, "grammar matcher has no vocabulary for tokens");
  const TokenVocabulary& vocabulary = *compiled_->vocabulary;
  if (id < 0 || static_cast<size_t>(id) >= vocabulary.size() || terminated()) return false;
  if (vocabulary.is_eos(id)) {
    if (!current().set.can_end) return false;
    history_.push_back(Snapshot{{}, pool_.size(), true});
    return true;
  }
  if (vocabulary.is_special(id)) return false;
  return accept_bytes(vocabulary.bytes(id));
}

void GrammarMatcher::rollback(size_t steps) {
  if (steps > this->steps()) {
    throw SpecdError(ErrorCode::invalid_argument, "grammar rollback of " + std::to_string(steps) + " steps, only " +
                                                      std::to_string(this->steps()) + " accepted");
  }
  history_.resize(history_.size() - steps);
  pool_.truncate(current().pool_size);
}

void GrammarMatcher::add_uncertain(const NodeTokenMask& node, int32_t stack, TokenBitset& mask) {
  const TokenVocabulary& vocabulary = *compiled_->vocabulary;
  scratch_[0].stacks.assign(1, stack);
  scratch_[0].can_end = false;
  size_t valid = 0;
  uint32_t dead_length = UINT32_MAX;  // tokens sharing this many bytes with a dead one are dead too
  for (size_t k = 0; k < node.uncertain.size(); ++k) {
    const uint32_t lcp = node.uncertain_lcp[k];
    if (lcp >= dead_length) continue;
    dead_length = UINT32_MAX;
    const int32_t id = vocabulary.sorted()[node.uncertain[k]];
    const std::string_view bytes = vocabulary.bytes(id);
    size_t depth = std::min<size_t>(lcp, valid);
    bool alive = true;
    for (; depth < bytes.size(); ++depth) {
      if (!stepper_.step(scratch_[depth], static_cast<uint8_t>(bytes[depth]), scratch_[depth + 1]).consumed) {
        alive = false;
        break;
      }
    }
    valid = depth;
    if (!alive) {
      dead_length = static_cast<uint32_t>(depth + 1);
      continue;
    }
    mask.set(id);
  }
}

void GrammarMatcher::fill_mask(TokenBitset& mask) {
  if (!compiled_) throw SpecdError(ErrorCode::invalid_argument, "grammar matcher has no vocabulary for masks");
  const TokenVocabulary& vocabulary = *compiled_->vocabulary;
  if (mask.size() != vocabulary.size()) mask.resize(vocabulary.size());
  mask.clear();
  if (terminated()) return;
  if (!within_bound([&] { fill_mask_stacks(mask); })) mask.clear();
}

void GrammarMatcher::fill_mask_stacks(TokenBitset& mask) {
  const TokenVocabulary& vocabulary = *compiled_->vocabulary;
  const StackSet& set = current().set;
  for (size_t i = 0; i < set.stacks.size(); ++i) {
    const int32_t stack = set.stacks[i];
    const NodeTokenMask* node = compiled_->masks.node(pool_[stack].node);
    TokenBitset& target = set.stacks.size() == 1 ? mask : one_stack_;
    if (&target == &one_stack_) {
      if (one_stack_.size() != vocabulary.size()) one_stack_.resize(vocabulary.size());
    }
    if (node->lists_rejected) {
      target.words() = vocabulary.ordinary_tokens().words();
      for (const int32_t id : node->listed) target.reset(id);
    } else {
      target.clear();
      for (const int32_t id : node->listed) target.set(id);
    }
    add_uncertain(*node, stack, target);
    if (&target == &one_stack_) mask |= one_stack_;
  }
  pool_.truncate(current().pool_size);
  if (set.can_end) {
    for (const int32_t id : vocabulary.eos_ids()) mask.set(id);
  }
}

int32_t GrammarMatcher::forced_token(TokenBitset& mask) {
  fill_mask(mask);
  int32_t found = -1;
  const std::vector<uint64_t>& words = mask.words();
  for (size_t w = 0; w < words.size(); ++w) {
    if (words[w] == 0) continue;
    if (found >= 0 || std::popcount(words[w]) != 1) return -1;
    found = static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(words[w])));
  }
  return found;
}

std::string GrammarMatcher::forced_bytes(size_t max_bytes) {
  std::string out;
  if (terminated()) return out;
  StackSet at = current().set;
  StackSet next;
  bool possible[256];
  const bool bounded = within_bound([&] {
    while (out.size() < max_bytes && !at.can_end) {
      StackStepper::next_bytes(*grammar_, pool_, at, possible);
      const auto count = std::count(std::begin(possible), std::end(possible), true);
      if (count != 1) break;
      const auto byte = static_cast<uint8_t>(std::find(std::begin(possible), std::end(possible), true) - possible);
      if (!stepper_.step(at, byte, next).consumed) break;
      out.push_back(static_cast<char>(byte));
      std::swap(at, next);
    }
  });
  pool_.truncate(current().pool_size);
  if (!bounded) out.clear();
  return out;
}

}  // namespace specd::grammar
