#pragma once
// The stacks a grammar matcher keeps and the one way they move. Stacks are persistent
// and hash-consed in a StackPool (equal stacks share one id, so a set of stacks is a set
// of ints and a rollback is a truncation). StackStepper reads one byte from a set of
// stacks and expands the result to the stacks that can read the next byte. The token
// mask precomputation runs the same code on stacks whose lower frames are unknown.
// Neither is thread-safe: one per matcher (or per precomputation).
#include <cstdint>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/grammar/byte_grammar.hpp"

namespace specd::grammar {

// What a step past StackStepper::kMaxParallelStacks throws: a bad_value SpecdError (a
// refusal at compile time), its own type so that a matcher can end the one request.
class TooAmbiguous : public SpecdError {
 public:
  TooAmbiguous();
};

inline constexpr int32_t kEmptyStack = -1;    // below the root frame: popping it ends the grammar
inline constexpr int32_t kUnknownBelow = -2;  // precomputation: the frames below are not known
inline constexpr int32_t kEscapedBelow = -3;  // ...and the stack has popped past the known frames

struct StackEntry {
  int32_t node;    // the top frame's node
  int32_t parent;  // the stack below, or one of the markers above
  bool escaped;    // the bottom marker is kEscapedBelow
};

class StackPool {
 public:
  int32_t push(int32_t node, int32_t parent);
  const StackEntry& operator[](int32_t id) const { return entries_[static_cast<size_t>(id)]; }
  size_t size() const { return entries_.size(); }
  void truncate(size_t size) { entries_.resize(size); }
  void clear();

 private:
  void rehash(size_t capacity);
  std::vector<StackEntry> entries_;
  std::vector<int32_t> slots_;  // id + 1; 0 is empty. Ids past size() are stale (after truncate).
  size_t used_slots_ = 0;
};

// Ready stacks: their top node has byte edges. can_end: some stack popped its last frame.
struct StackSet {
  std::vector<int32_t> stacks;
  bool can_end = false;
  bool empty() const { return stacks.empty() && !can_end; }
};

class StackStepper {
 public:
  // An ambiguous grammar can keep exponentially many parses open; past this many ready
  // stacks a step throws TooAmbiguous (a refusal at compile time in the precomputation,
  // which walks every state; GrammarMatcher turns it into a refusal it remembers).
  static constexpr size_t kMaxParallelStacks = 10000;

  StackStepper(const ByteGrammar& grammar, StackPool& pool) : grammar_(&grammar), pool_(&pool) {}
  // A copied owner points its copy at its own pool.
  void bind(StackPool& pool) { pool_ = &pool; }

  // `to` becomes the ready stacks reachable from `stack` (replacing its contents).
  void expand_one(int32_t stack, StackSet& to);
  struct Step {
    bool consumed = false;        // some stack read the byte
    bool consumed_known = false;  // ... one that had not popped past its known frames
  };
  // `to` becomes what `from` reaches by reading `byte` (to must not alias from).
  Step step(const StackSet& from, uint8_t byte, StackSet& to);
  // Every byte some stack of `from` can read next, as a 256-entry flag array.
  static void next_bytes(const ByteGrammar& grammar, const StackPool& pool, const StackSet& from, bool (&out)[256]);

 private:
  void expand(int32_t stack, StackSet& to);
  bool first_visit(int32_t stack);

  const ByteGrammar* grammar_;
  StackPool* pool_;
  std::vector<uint32_t> visit_mark_;
  uint32_t epoch_ = 0;
  std::vector<int32_t> to_expand_;
};

}  // namespace specd::grammar
