#include "engine/grammar/grammar_stacks.hpp"

#include <algorithm>
#include <string>

namespace specd::grammar {
namespace {

uint64_t stack_key(int32_t node, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) | static_cast<uint32_t>(parent);
}

size_t slot_of(uint64_t key, size_t mask) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask; }

}  // namespace

TooAmbiguous::TooAmbiguous()
    : SpecdError(ErrorCode::bad_value, "the grammar is too ambiguous: more than " +
                                           std::to_string(StackStepper::kMaxParallelStacks) +
                                           " parses are open at once") {}

int32_t StackPool::push(int32_t node, int32_t parent) {
  if ((used_slots_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(64, slots_.size() * 2));
  const uint64_t key = stack_key(node, parent);
  const size_t mask = slots_.size() - 1;
  size_t reusable = slots_.size();
  for (size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
    const int32_t v = slots_[i];
    if (v == 0) {
      if (reusable == slots_.size()) {
        reusable = i;
        ++used_slots_;
      }
      break;
    }
    const auto id = static_cast<size_t>(v - 1);
    if (id >= entries_.size()) {
      if (reusable == slots_.size()) reusable = i;
    } else if (entries_[id].node == node && entries_[id].parent == parent) {
      return static_cast<int32_t>(id);
    }
  }
  const bool escaped = parent >= 0 ? entries_[static_cast<size_t>(parent)].escaped : parent == kEscapedBelow;
  entries_.push_back({node, parent, escaped});
  slots_[reusable] = static_cast<int32_t>(entries_.size());
  return static_cast<int32_t>(entries_.size() - 1);
}

void StackPool::clear() {
  entries_.clear();
  std::fill(slots_.begin(), slots_.end(), 0);
  used_slots_ = 0;
}

void StackPool::rehash(size_t capacity) {
  slots_.assign(capacity, 0);
  used_slots_ = 0;
  const size_t mask = capacity - 1;
  for (size_t id = 0; id < entries_.size(); ++id) {
    size_t i = slot_of(stack_key(entries_[id].node, entries_[id].parent), mask);
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int32_t>(id + 1);
    ++used_slots_;
  }
}

bool StackStepper::first_visit(int32_t stack) {
  const auto id = static_cast<size_t>(stack);
  if (visit_mark_.size() <= id) visit_mark_.resize(std::max(id + 1, visit_mark_.size() * 2), 0);
  if (visit_mark_[id] == epoch_) return false;
  visit_mark_[id] = epoch_;
  return true;
}

void StackStepper::expand(int32_t stack, StackSet& to) {
  to_expand_.assign(1, stack);
  while (!to_expand_.empty()) {
    const int32_t s = to_expand_.back();
    to_expand_.pop_back();
    if (!first_visit(s)) continue;
    const StackEntry top = (*pool_)[s];
    const GrammarNode& n = grammar_->node(top.node);
    if (!n.bytes.empty()) {
      to.stacks.push_back(s);
      if (to.stacks.size() > kMaxParallelStacks) throw TooAmbiguous();
    }
    for (const CallEdge& c : n.calls) {
      const int32_t below = pool_->push(c.target, top.parent);
      to_expand_.push_back(pool_->push(grammar_->rules[static_cast<size_t>(c.rule)].start, below));
    }
    if (!n.final) continue;
    if (top.parent >= 0) {
      to_expand_.push_back(top.parent);
    } else if (top.parent == kEmptyStack) {
      to.can_end = true;
    } else {
      // Unknown frames below: the rule may return to any of its call sites.
      const GrammarRule& rule = grammar_->rules[static_cast<size_t>(n.rule)];
      for (const int32_t ret : rule.return_nodes) to_expand_.push_back(pool_->push(ret, kEscapedBelow));
      if (n.rule == grammar_->root_rule) to.can_end = true;
    }
  }
}

void StackStepper::expand_one(int32_t stack, StackSet& to) {
  to.stacks.clear();
  to.can_end = false;
  ++epoch_;
  expand(stack, to);
}

StackStepper::Step StackStepper::step(const StackSet& from, uint8_t byte, StackSet& to) {
  to.stacks.clear();
  to.can_end = false;
  ++epoch_;
  Step result;
  for (const int32_t s : from.stacks) {
    const StackEntry top = (*pool_)[s];
    for (const ByteEdge& e : grammar_->node(top.node).bytes) {
      if (e.lo > byte) break;
      if (e.hi < byte) continue;
      const int32_t next = pool_->push(e.target, top.parent);
      result.consumed = true;
      if (!(*pool_)[next].escaped) result.consumed_known = true;
      expand(next, to);
    }
  }
  return result;
}

void StackStepper::next_bytes(const ByteGrammar& grammar, const StackPool& pool, const StackSet& from,
                              bool (&out)[256]) {
  std::fill(std::begin(out), std::end(out), false);
  for (const int32_t s : from.stacks) {
    for (const ByteEdge& e : grammar.node(pool[s].node).bytes) {
      for (int b = e.lo; b <= e.hi; ++b) out[b] = true;
    }
  }
}

}  // namespace specd::grammar
