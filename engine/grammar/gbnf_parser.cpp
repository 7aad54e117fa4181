#include "engine/grammar/gbnf_parser.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_syntax.hpp"
#include "engine/grammar/grammar_builder.hpp"
#include "engine/grammar/json_schema_compiler.hpp"

namespace specd::grammar {
namespace {

// A rule whose expansion would exceed this many states stays a call instead of being
// copied into each user. Copying (inlining) is what makes a state's token mask
// independent of the stack; calls are kept for recursion and for very large rules.
constexpr double kMaxInlinedStates = 20000;
// Rules copied into rules copied into ...: bounded so lowering cannot exhaust the stack.
constexpr int kMaxInlineDepth = 200;

void collect_refs(const GbnfExpr& e, std::set<std::string>& out) {
  if (e.kind == GbnfExpr::Kind::rule_ref) out.insert(e.text);
  for (const GbnfExpr& c : e.children) collect_refs(c, out);
}

class GbnfLowering {
 public:
  GbnfLowering(const GbnfRules& rules, std::string_view root) : rules_(rules), root_(root) {}

  ByteGrammar lower() {
    if (rules_.rules.find(root_) == rules_.rules.end()) {
      throw SpecdError(ErrorCode::bad_value, "GBNF grammar has no rule named '" + root_ + "'");
    }
    for (const auto& [name, body] : rules_.rules) {
      std::set<std::string> refs;
      collect_refs(body, refs);
      for (const std::string& r : refs) {
        if (rules_.rules.find(r) == rules_.rules.end()) {
          throw SpecdError(ErrorCode::bad_value, "GBNF rule '" + name + "' uses undefined rule '" + r + "'");
        }
      }
      refs_[name] = std::move(refs);
    }
    for (const auto& [name, body] : rules_.rules) {
      if (reaches(name, name)) recursive_.insert(name);
    }
    const int32_t root = rule_id(root_);
    while (!pending_.empty()) {
      const std::string name = pending_.back();
      pending_.pop_back();
      builder_.define_rule(ids_.at(name), build(rules_.rules.find(name)->second));
    }
    return builder_.finish(root);
  }

 private:
  bool reaches(const std::string& from, const std::string& target) {
    std::set<std::string> seen;
    std::vector<std::string> pending(refs_[from].begin(), refs_[from].end());
    while (!pending.empty()) {
      const std::string r = pending.back();
      pending.pop_back();
      if (r == target) return true;
      if (!seen.insert(r).second) continue;
      pending.insert(pending.end(), refs_[r].begin(), refs_[r].end());
    }
    return false;
  }

  double size_of(const GbnfExpr& e) {
    if (++size_depth_ > kMaxInlineDepth * 8) {
      throw SpecdError(ErrorCode::bad_value, "GBNF rules nest deeper than " + std::to_string(kMaxInlineDepth));
    }
    const double size = size_of_inner(e);
    --size_depth_;
    return size;
  }

  double size_of_inner(const GbnfExpr& e) {
    switch (e.kind) {
      case GbnfExpr::Kind::literal:
        return static_cast<double>(e.text.size()) + 1;
      case GbnfExpr::Kind::char_class:
        return 2.0 + static_cast<double>(e.chars.ranges().size()) * 3;
      case GbnfExpr::Kind::json_schema:  // a guess: compiled schemas run to a few states per byte
        return 4.0 * static_cast<double>(e.text.size());
      case GbnfExpr::Kind::rule_ref:
        return inlined(e.text) ? rule_size(e.text) : 2;
      case GbnfExpr::Kind::repeat: {
        const double copies = e.max < 0 ? e.min + 1 : std::max(e.max, 1);
        return 2 + copies * size_of(e.children.front());
      }
      default: {
        double total = 2;
        for (const GbnfExpr& c : e.children) total += size_of(c);
        return total;
      }
    }
  }

  double rule_size(const std::string& name) {
    auto it = sizes_.find(name);
    if (it != sizes_.end()) return it->second;
    const double size = size_of(rules_.rules.find(name)->second);
    sizes_[name] = size;
    return size;
  }

  bool inlined(const std::string& name) {
    return name != root_ && recursive_.count(name) == 0 && rule_size(name) <= kMaxInlinedStates;
  }

  int32_t rule_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int32_t id = builder_.declare_rule(name);
    ids_[name] = id;
    pending_.push_back(name);
    return id;
  }

  Fragment build(const GbnfExpr& e) {
    switch (e.kind) {
      case GbnfExpr::Kind::literal:
        return builder_.literal(e.text);
      case GbnfExpr::Kind::char_class:
        return builder_.codepoints(e.chars);
      case GbnfExpr::Kind::json_schema:
        return json_schema_fragment(builder_, e.text);
      case GbnfExpr::Kind::rule_ref: {
        if (!inlined(e.text)) return builder_.call(rule_id(e.text));
        if (++inline_depth_ > kMaxInlineDepth) {
          throw SpecdError(ErrorCode::bad_value, "GBNF rules nest deeper than " + std::to_string(kMaxInlineDepth) +
                                                     " (at rule '" + e.text + "')");
        }
        const Fragment f = build(rules_.rules.find(e.text)->second);
        --inline_depth_;
        return f;
      }
      case GbnfExpr::Kind::repeat:
        return builder_.repeat([&] { return build(e.children.front()); }, e.min, e.max);
      case GbnfExpr::Kind::sequence: {
        std::vector<Fragment> parts;
        for (const GbnfExpr& c : e.children) parts.push_back(build(c));
        return builder_.sequence(parts);
      }
      case GbnfExpr::Kind::alternatives: {
        std::vector<Fragment> parts;
        for (const GbnfExpr& c : e.children) parts.push_back(build(c));
        return builder_.alternatives(parts);
      }
    }
    return builder_.empty();
  }

  const GbnfRules& rules_;
  std::string root_;
  GrammarBuilder builder_;
  std::map<std::string, std::set<std::string>> refs_;
  std::set<std::string> recursive_;
  std::map<std::string, double> sizes_;
  std::map<std::string, int32_t> ids_;
  std::vector<std::string> pending_;
  int inline_depth_ = 0;
  int size_depth_ = 0;
};

}  // namespace

ByteGrammar compile_gbnf(std::string_view text, std::string_view root_rule) {
  const GbnfRules rules = parse_gbnf(text);
  return GbnfLowering(rules, root_rule).lower();
}

}  // namespace specd::grammar
