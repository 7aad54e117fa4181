#pragma once
// Builds a ByteGrammar from Thompson-style fragments (states joined by epsilon moves),
// the one construction the GBNF parser and the JSON Schema compiler share. finish()
// removes the epsilon moves, drops states that cannot complete, and refuses left
// recursion (a rule that can enter itself without reading a byte would make a matcher
// loop) with SpecdError bad_value. One builder per compilation; not thread-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/byte_grammar.hpp"
#include "engine/grammar/codepoint_set.hpp"

namespace specd::grammar {

struct Fragment {
  int32_t start;
  int32_t end;
};

class GrammarBuilder {
 public:
  // Grammars above this many states are refused (bad_value), so a schema cannot make
  // the per-state token-mask precomputation unbounded.
  static constexpr size_t kMaxStates = 400000;
  // ... and above this many states after finish(): each costs a walk of the vocabulary
  // when masks are precomputed (the large benchmark schema has under 10,000).
  static constexpr size_t kMaxNodes = 60000;

  int32_t declare_rule(std::string name);
  void define_rule(int32_t rule, Fragment body);
  int32_t rule_count() const { return static_cast<int32_t>(rules_.size()); }
  const std::string& rule_name(int32_t rule) const { return rules_[static_cast<size_t>(rule)].name; }

  int32_t new_state();
  void epsilon(int32_t from, int32_t to);

  Fragment empty();
  Fragment nothing();  // matches no input at all (a `false` schema)
  Fragment byte_range(uint8_t lo, uint8_t hi);
  Fragment literal(std::string_view bytes);
  Fragment codepoints(const CodepointSet& set);  // one code point of the set, UTF-8
  Fragment call(int32_t rule);
  Fragment sequence(const std::vector<Fragment>& parts);
  Fragment alternatives(const std::vector<Fragment>& choices);
  Fragment optional(Fragment inner);
  Fragment star(Fragment inner);
  // make() builds a fresh copy of the repeated part each time it is called; max < 0 is
  // unbounded. Bounded repeats nest optionals, so x{0,3} has one parse per input.
  Fragment repeat(const std::function<Fragment()>& make, int min, int max);

  ByteGrammar finish(int32_t root_rule) const;

 private:
  class Layout;  // epsilon removal, in grammar_builder.cpp

  struct State {
    std::vector<int32_t> epsilons;
    std::vector<ByteEdge> bytes;
    std::vector<CallEdge> calls;
  };
  struct Rule {
    std::string name;
    Fragment body{-1, -1};
  };
  State& state(int32_t id) { return states_[static_cast<size_t>(id)]; }

  std::vector<State> states_;
  std::vector<Rule> rules_;
};

}  // namespace specd::grammar
