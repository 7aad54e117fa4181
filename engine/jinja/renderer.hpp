#pragma once
// One render of a parsed template: the scope chain, the output buffer and the limits.
// Lives for one Template::render call on one thread; filters, tests, methods and
// globals receive it to call back into templates (macros) and to read the limits.
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/jinja/ast.hpp"
#include "engine/jinja/value.hpp"

namespace specd::jinja {

struct RenderLimits {
  size_t max_loop_iterations = 1'000'000;  // over the whole render, all loops together
  int max_recursion_depth = 100;           // macro calls in progress
  size_t max_output_bytes = 16 << 20;      // any one string the render builds
};

// Where strftime_now reads the time (local time, as transformers' datetime.now()).
using Clock = std::function<std::tm()>;

// A scope: a for-loop iteration, a macro call, a block body, or the template's top level.
struct Frame {
  std::shared_ptr<Frame> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value value);
};

class Renderer {
 public:
  Renderer(const Value& variables, const RenderLimits& limits, const Clock& clock);

  std::string render(const Body& body);

  Value eval(const Expr& e);
  Value lookup(std::string_view name) const;
  // Calls any callable value (macro, global, bound method) with arguments.
  Value call(const Value& callee, CallArgs& args);
  // Renders a body into a string in a fresh scope below `parent` (macros, blocks).
  std::string capture(const Body& body, std::shared_ptr<Frame> scope);

  const RenderLimits& limits() const { return limits_; }
  const Clock& clock() const { return clock_; }
  void check_size(size_t bytes) const;
  void count_iteration();

 private:
  enum class Flow { normal, break_, continue_ };

  Flow exec(const Body& body);
  Flow exec_statement(const Stmt& s);
  Flow exec_for(const Stmt& s, const Value& iterable, int64_t depth0);
  void exec_set(const Stmt& s, Value value);
  void define_macro(const Stmt& s);
  Value make_macro(const Stmt& s, std::shared_ptr<Frame> closure, std::string name);
  void emit(std::string_view text);
  void emit_value(const Value& v);

  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  CallArgs eval_args(const Expr& e);

  const Value& variables_;
  RenderLimits limits_;
  Clock clock_;
  std::shared_ptr<Frame> frame_;
  std::string* out_ = nullptr;
  size_t iterations_ = 0;
  int depth_ = 0;
};

}  // namespace specd::jinja
