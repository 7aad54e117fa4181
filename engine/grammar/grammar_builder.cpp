#include "engine/grammar/grammar_builder.hpp"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "engine/base/errors.hpp"

namespace specd::grammar {
namespace {

[[noreturn]] void refuse(const std::string& message) { throw SpecdError(ErrorCode::bad_value, message); }

// Nodes reachable from `from` without reading a byte: across calls into rules that can
// end without reading one.
void zero_byte_closure(const ByteGrammar& g, int32_t from, const std::vector<bool>& nullable,
                       std::vector<int32_t>& seen, const std::function<void(const CallEdge&)>& on_call) {
  std::vector<int32_t> pending{from};
  while (!pending.empty()) {
    const int32_t n = pending.back();
    pending.pop_back();
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    for (const CallEdge& c : g.node(n).calls) {
      on_call(c);
      if (nullable[static_cast<size_t>(c.rule)]) pending.push_back(c.target);
    }
  }
}

void check_left_recursion(const ByteGrammar& g) {
  const size_t rules = g.rules.size();
  std::vector<bool> nullable(rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules; ++r) {
      if (nullable[r]) continue;
      std::vector<int32_t> seen;
      zero_byte_closure(g, g.rules[r].start, nullable, seen, [](const CallEdge&) {});
      if (std::any_of(seen.begin(), seen.end(), [&](int32_t n) { return g.node(n).final; })) {
        nullable[r] = true;
        changed = true;
      }
    }
  }
  std::vector<std::vector<int32_t>> left_calls(rules);
  for (size_t r = 0; r < rules; ++r) {
    std::vector<int32_t> seen;
    zero_byte_closure(g, g.rules[r].start, nullable, seen, [&](const CallEdge& c) { left_calls[r].push_back(c.rule); });
  }
  std::vector<int> color(rules, 0);  // 0 new, 1 on the path, 2 done
  std::function<void(size_t)> visit = [&](size_t r) {
    color[r] = 1;
    for (const int32_t next : left_calls[r]) {
      const auto n = static_cast<size_t>(next);
      if (color[n] == 1) {
        refuse("grammar rule '" + g.rules[n].name + "' is left-recursive (it can enter itself before reading a byte)");
      }
      if (color[n] == 0) visit(n);
    }
    color[r] = 2;
  };
  for (size_t r = 0; r < rules; ++r) {
    if (color[r] == 0) visit(r);
  }
}

void drop_unproductive(ByteGrammar& g) {
  // Backwards from the final nodes over reversed edges (a worklist, linear in the edges).
  const size_t n_nodes = g.nodes.size();
  std::vector<std::vector<int32_t>> byte_preds(n_nodes);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> call_preds_by_target(n_nodes);       // (caller, rule)
  std::vector<std::vector<std::pair<int32_t, int32_t>>> call_preds_by_rule(g.rules.size());  // (caller, target)
  for (size_t i = 0; i < n_nodes; ++i) {
    for (const ByteEdge& e : g.nodes[i].bytes)
      byte_preds[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(i));
    for (const CallEdge& c : g.nodes[i].calls) {
      call_preds_by_target[static_cast<size_t>(c.target)].emplace_back(static_cast<int32_t>(i), c.rule);
      call_preds_by_rule[static_cast<size_t>(c.rule)].emplace_back(static_cast<int32_t>(i), c.target);
    }
  }
  std::vector<bool> productive(n_nodes, false);
  std::vector<int32_t> pending;
  const auto mark = [&](int32_t n) {
    if (!productive[static_cast<size_t>(n)]) {
      productive[static_cast<size_t>(n)] = true;
      pending.push_back(n);
    }
  };
  for (size_t i = 0; i < n_nodes; ++i) {
    if (g.nodes[i].final) mark(static_cast<int32_t>(i));
  }
  const auto start_productive = [&](int32_t rule) {
    return productive[static_cast<size_t>(g.rules[static_cast<size_t>(rule)].start)];
  };
  while (!pending.empty()) {
    const int32_t n = pending.back();
    pending.pop_back();
    for (const int32_t p : byte_preds[static_cast<size_t>(n)]) mark(p);
    for (const auto& [caller, rule] : call_preds_by_target[static_cast<size_t>(n)]) {
      if (start_productive(rule)) mark(caller);
    }
    const int32_t rule = g.nodes[static_cast<size_t>(n)].rule;
    if (g.rules[static_cast<size_t>(rule)].start == n) {
      for (const auto& [caller, target] : call_preds_by_rule[static_cast<size_t>(rule)]) {
        if (productive[static_cast<size_t>(target)]) mark(caller);
      }
    }
  }
  if (!productive[static_cast<size_t>(g.root_start())]) refuse("the grammar accepts no input at all");
  for (GrammarNode& n : g.nodes) {
    std::erase_if(n.bytes, [&](const ByteEdge& e) { return !productive[static_cast<size_t>(e.target)]; });
    std::erase_if(n.calls, [&](const CallEdge& c) {
      return !productive[static_cast<size_t>(c.target)] ||
             !productive[static_cast<size_t>(g.rules[static_cast<size_t>(c.rule)].start)];
    });
  }
}

void mark_reachable(ByteGrammar& g) {
  std::vector<int32_t> pending{g.root_start()};
  while (!pending.empty()) {
    const int32_t id = pending.back();
    pending.pop_back();
    GrammarNode& n = g.nodes[static_cast<size_t>(id)];
    if (n.reachable) continue;
    n.reachable = true;
    for (const ByteEdge& e : n.bytes) pending.push_back(e.target);
    for (const CallEdge& c : n.calls) {
      pending.push_back(c.target);
      pending.push_back(g.rules[static_cast<size_t>(c.rule)].start);
      g.rules[static_cast<size_t>(c.rule)].return_nodes.push_back(c.target);
    }
  }
  for (GrammarRule& r : g.rules) {
    std::sort(r.return_nodes.begin(), r.return_nodes.end());
    r.return_nodes.erase(std::unique(r.return_nodes.begin(), r.return_nodes.end()), r.return_nodes.end());
  }
}

}  // namespace

int32_t GrammarBuilder::declare_rule(std::string name) {
  rules_.push_back(Rule{std::move(name), {-1, -1}});
  return static_cast<int32_t>(rules_.size() - 1);
}

void GrammarBuilder::define_rule(int32_t rule, Fragment body) { rules_[static_cast<size_t>(rule)].body = body; }

int32_t GrammarBuilder::new_state() {
  if (states_.size() >= kMaxStates) {
    refuse("the grammar is too large (more than " + std::to_string(kMaxStates) + " automaton states)");
  }
  states_.emplace_back();
  return static_cast<int32_t>(states_.size() - 1);
}

void GrammarBuilder::epsilon(int32_t from, int32_t to) { state(from).epsilons.push_back(to); }

Fragment GrammarBuilder::empty() {
  const int32_t s = new_state();
  return {s, s};
}

Fragment GrammarBuilder::nothing() { return {new_state(), new_state()}; }

Fragment GrammarBuilder::byte_range(uint8_t lo, uint8_t hi) {
  const Fragment f{new_state(), new_state()};
  state(f.start).bytes.push_back({lo, hi, f.end});
  return f;
}

Fragment GrammarBuilder::literal(std::string_view bytes) {
  const int32_t start = new_state();
  int32_t at = start;
  for (const char c : bytes) {
    const int32_t next = new_state();
    const auto b = static_cast<uint8_t>(c);
    state(at).bytes.push_back({b, b, next});
    at = next;
  }
  return {start, at};
}

Fragment GrammarBuilder::codepoints(const CodepointSet& set) {
  const Fragment f{new_state(), new_state()};
  for (const Utf8Sequence& seq : set.utf8_sequences()) {
    int32_t at = f.start;
    for (int i = 0; i < seq.length; ++i) {
      const int32_t next = i + 1 == seq.length ? f.end : new_state();
      state(at).bytes.push_back({seq.lo[static_cast<size_t>(i)], seq.hi[static_cast<size_t>(i)], next});
      at = next;
    }
  }
  return f;
}

Fragment GrammarBuilder::call(int32_t rule) {
  const Fragment f{new_state(), new_state()};
  state(f.start).calls.push_back({rule, f.end});
  return f;
}

Fragment GrammarBuilder::sequence(const std::vector<Fragment>& parts) {
  if (parts.empty()) return empty();
  for (size_t i = 1; i < parts.size(); ++i) epsilon(parts[i - 1].end, parts[i].start);
  return {parts.front().start, parts.back().end};
}

Fragment GrammarBuilder::alternatives(const std::vector<Fragment>& choices) {
  if (choices.size() == 1) return choices.front();
  const Fragment f{new_state(), new_state()};
  for (const Fragment& c : choices) {
    epsilon(f.start, c.start);
    epsilon(c.end, f.end);
  }
  return f;
}

Fragment GrammarBuilder::optional(Fragment inner) {
  const Fragment f{new_state(), new_state()};
  epsilon(f.start, inner.start);
  epsilon(inner.end, f.end);
  epsilon(f.start, f.end);
  return f;
}

Fragment GrammarBuilder::star(Fragment inner) {
  const int32_t hub = new_state();
  epsilon(hub, inner.start);
  epsilon(inner.end, hub);
  return {hub, hub};
}

Fragment GrammarBuilder::repeat(const std::function<Fragment()>& make, int min, int max) {
  std::vector<Fragment> parts;
  for (int i = 0; i < min; ++i) parts.push_back(make());
  if (max < 0) {
    parts.push_back(star(make()));
  } else if (max > min) {
    // x{0,n} as (x (x (...)?)?)?: built from the innermost out.
    Fragment tail = optional(make());
    for (int i = min + 1; i < max; ++i) tail = optional(sequence({make(), tail}));
    parts.push_back(tail);
  }
  return sequence(parts);
}

// Removes the epsilon moves: each rule's nodes are the epsilon closures of its start and
// of the targets of its byte and call edges, and a node takes the edges of its closure.
// Closures that read, call and return alike share one node.
class GrammarBuilder::Layout {
 public:
  Layout(const GrammarBuilder& builder, ByteGrammar& g)
      : b_(builder),
        g_(g),
        ids_(builder.rules_.size()),
        state_ids_(builder.rules_.size()),
        in_closure_(builder.states_.size(), false) {}

  void run() {
    for (size_t r = 0; r < b_.rules_.size(); ++r) {
      if (b_.rules_[r].body.start < 0) refuse("grammar rule '" + b_.rules_[r].name + "' is used but never defined");
      g_.rules[r].name = b_.rules_[r].name;
      g_.rules[r].start = node_of(static_cast<int32_t>(r), b_.rules_[r].body.start);
    }
    while (!to_build_.empty()) {
      auto [id, closure] = std::move(to_build_.back());
      to_build_.pop_back();
      build_node(id, closure);
    }
  }

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int32_t>& v) const {
      size_t h = v.size();
      for (const int32_t x : v) h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(x);
      return h;
    }
  };

  std::vector<int32_t> closure_of(int32_t s) {
    std::vector<int32_t> closure{s};
    in_closure_[static_cast<size_t>(s)] = true;
    for (size_t i = 0; i < closure.size(); ++i) {
      for (const int32_t next : b_.states_[static_cast<size_t>(closure[i])].epsilons) {
        if (!in_closure_[static_cast<size_t>(next)]) {
          in_closure_[static_cast<size_t>(next)] = true;
          closure.push_back(next);
        }
      }
    }
    for (const int32_t c : closure) in_closure_[static_cast<size_t>(c)] = false;
    return closure;
  }

  // What a closure does: its states that read or call, and whether it can return.
  std::vector<int32_t> key_of(int32_t rule, const std::vector<int32_t>& closure) const {
    std::vector<int32_t> key;
    for (const int32_t c : closure) {
      const State& st = b_.states_[static_cast<size_t>(c)];
      if (!st.bytes.empty() || !st.calls.empty()) key.push_back(c);
    }
    std::sort(key.begin(), key.end());
    const int32_t end = b_.rules_[static_cast<size_t>(rule)].body.end;
    key.push_back(std::find(closure.begin(), closure.end(), end) != closure.end() ? -1 : -2);
    return key;
  }

  int32_t node_of(int32_t rule, int32_t s) {
    auto& by_state = state_ids_[static_cast<size_t>(rule)];
    if (auto it = by_state.find(s); it != by_state.end()) return it->second;
    std::vector<int32_t> closure = closure_of(s);
    auto [it, added] =
        ids_[static_cast<size_t>(rule)].try_emplace(key_of(rule, closure), static_cast<int32_t>(g_.nodes.size()));
    if (added) {
      g_.nodes.emplace_back();
      g_.nodes.back().rule = rule;
      to_build_.emplace_back(it->second, std::move(closure));
    }
    by_state[s] = it->second;
    return it->second;
  }

  void build_node(int32_t id, const std::vector<int32_t>& closure) {
    const int32_t rule = g_.nodes[static_cast<size_t>(id)].rule;
    GrammarNode built;
    built.rule = rule;
    for (const int32_t c : closure) {
      const State& st = b_.states_[static_cast<size_t>(c)];
      if (c == b_.rules_[static_cast<size_t>(rule)].body.end) built.final = true;
      for (const ByteEdge& e : st.bytes) built.bytes.push_back({e.lo, e.hi, node_of(rule, e.target)});
      for (const CallEdge& e : st.calls) built.calls.push_back({e.rule, node_of(rule, e.target)});
    }
    const auto less = [](const ByteEdge& a, const ByteEdge& b) {
      return a.lo != b.lo ? a.lo < b.lo : a.hi != b.hi ? a.hi < b.hi : a.target < b.target;
    };
    const auto same = [](const ByteEdge& a, const ByteEdge& b) {
      return a.lo == b.lo && a.hi == b.hi && a.target == b.target;
    };
    std::sort(built.bytes.begin(), built.bytes.end(), less);
    built.bytes.erase(std::unique(built.bytes.begin(), built.bytes.end(), same), built.bytes.end());
    g_.nodes[static_cast<size_t>(id)] = std::move(built);
  }

  const GrammarBuilder& b_;
  ByteGrammar& g_;
  std::vector<std::unordered_map<std::vector<int32_t>, int32_t, KeyHash>> ids_;
  std::vector<std::unordered_map<int32_t, int32_t>> state_ids_;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> to_build_;  // (node, closure) still to build
  std::vector<bool> in_closure_;
};

ByteGrammar GrammarBuilder::finish(int32_t root_rule) const {
  ByteGrammar g;
  g.root_rule = root_rule;
  g.rules.resize(rules_.size());
  Layout(*this, g).run();
  drop_unproductive(g);
  check_left_recursion(g);
  mark_reachable(g);
  const auto reachable =
      std::count_if(g.nodes.begin(), g.nodes.end(), [](const GrammarNode& n) { return n.reachable; });
  if (static_cast<size_t>(reachable) > kMaxNodes) {
    refuse("the grammar is too large (" + std::to_string(reachable) + " automaton states; the limit is " +
           std::to_string(kMaxNodes) + ")");
  }
  return g;
}

}  // namespace specd::grammar
