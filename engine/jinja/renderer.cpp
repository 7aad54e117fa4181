#include "engine/jinja/renderer.hpp"

#include "engine/jinja/filters.hpp"
#include "engine/jinja/globals.hpp"
#include "engine/jinja/operations.hpp"
#include "engine/jinja/python_text.hpp"
#include "engine/jinja/template_error.hpp"

namespace specd::jinja {

const Value* Frame::find(std::string_view name) const {
  for (const auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Frame::set(std::string_view name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

Renderer::Renderer(const Value& variables, const RenderLimits& limits, const Clock& clock)
    : variables_(variables), limits_(limits), clock_(clock), frame_(std::make_shared<Frame>()) {}

std::string Renderer::render(const Body& body) {
  std::string out;
  out_ = &out;
  exec(body);
  return out;
}

void Renderer::check_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    throw TemplateError(ErrorKind::limit, "output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
}

void Renderer::count_iteration() {
  if (++iterations_ > limits_.max_loop_iterations) {
    throw TemplateError(ErrorKind::limit,
                        "more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
  }
}

void Renderer::emit(std::string_view text) {
  out_->append(text);
  check_size(out_->size());
}

void Renderer::emit_value(const Value& v) {
  if (v.is_string()) {
    emit(v.str());
  } else {
    append_py_str(*out_, v);
    check_size(out_->size());
  }
}

Value Renderer::lookup(std::string_view name) const {
  for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
    if (const Value* v = f->find(name)) return *v;
  }
  if (variables_.is_object()) {
    if (const Value* v = variables_.object().find(name)) return *v;
  }
  if (const Value* g = find_global(name)) return *g;
  return Value::undefined(py_string_repr(name) + " is undefined");
}

std::string Renderer::capture(const Body& body, std::shared_ptr<Frame> scope) {
  std::string buffer;
  std::string* saved_out = out_;
  std::shared_ptr<Frame> saved_frame = std::move(frame_);
  out_ = &buffer;
  frame_ = std::move(scope);
  exec(body);
  out_ = saved_out;
  frame_ = std::move(saved_frame);
  return buffer;
}

Renderer::Flow Renderer::exec(const Body& body) {
  for (const Stmt& s : body) {
    Flow flow;
    try {
      flow = exec_statement(s);
    } catch (const TemplateError& e) {
      if (e.line() == 0) throw e.with_line(s.line);
      throw;
    }
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

namespace {

std::shared_ptr<Frame> child_of(const std::shared_ptr<Frame>& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  return f;
}

void bind_targets(Frame& frame, const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    frame.set(targets[0], value);
    return;
  }
  auto items = iterate(value);
  if (items->size() != targets.size()) {
    throw TemplateError(ErrorKind::value,
                        (items->size() > targets.size() ? "too many values to unpack" : "not enough values to unpack") +
                            std::string(" (expected ") + std::to_string(targets.size()) + ", got " +
                            std::to_string(items->size()) + ")");
  }
  for (size_t i = 0; i < targets.size(); ++i) frame.set(targets[i], (*items)[i]);
}

// A filter chain parsed with an empty innermost subject (filter and set blocks).
Value apply_chain(Renderer& r, const Expr& f, Value subject, CallArgs (*args_of)(Renderer&, const Expr&)) {
  if (f.a) subject = apply_chain(r, *f.a, std::move(subject), args_of);
  CallArgs args = args_of(r, f);
  return apply_filter(r, f.name, std::move(subject), args);
}

CallArgs literal_args(Renderer& r, const Expr& e) {
  CallArgs args;
  for (const auto& a : e.args) args.positional.push_back(r.eval(*a));
  for (const auto& [k, v] : e.kwargs) args.keywords.emplace_back(k, r.eval(*v));
  return args;
}

}  // namespace

Renderer::Flow Renderer::exec_statement(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::text:
      emit(s.text);
      return Flow::normal;
    case StmtKind::output:
      emit_value(eval(*s.expr));
      return Flow::normal;
    case StmtKind::if_:
      return exec(eval(*s.expr).truthy() ? s.body : s.else_body);
    case StmtKind::for_:
      return exec_for(s, eval(*s.expr), 0);
    case StmtKind::set:
      exec_set(s, eval(*s.expr));
      return Flow::normal;
    case StmtKind::set_block: {
      Value v(capture(s.body, child_of(frame_)));
      if (s.filter_expr) v = apply_chain(*this, *s.filter_expr, std::move(v), literal_args);
      exec_set(s, std::move(v));
      return Flow::normal;
    }
    case StmtKind::macro:
      frame_->set(s.text, make_macro(s, frame_, s.text));
      return Flow::normal;
    case StmtKind::call_block: {
      const Expr& call_expr = *s.expr;
      CallArgs args = eval_args(call_expr);
      args.keywords.emplace_back("caller", make_macro(s, frame_, "caller"));
      Value callee = eval(*call_expr.a);
      emit_value(call(callee, args));
      return Flow::normal;
    }
    case StmtKind::filter_block:
      emit_value(apply_chain(*this, *s.filter_expr, Value(capture(s.body, child_of(frame_))), literal_args));
      return Flow::normal;
    case StmtKind::break_:
      return Flow::break_;
    case StmtKind::continue_:
      return Flow::continue_;
    case StmtKind::scope:
      emit(capture(s.body, child_of(frame_)));
      return Flow::normal;
  }
  return Flow::normal;
}

Renderer::Flow Renderer::exec_for(const Stmt& s, const Value& iterable, int64_t depth0) {
  std::shared_ptr<Array> items = iterate(iterable);
  std::shared_ptr<Frame> parent = frame_;
  if (s.filter_expr) {
    auto kept = std::make_shared<Array>();
    for (const Value& item : *items) {
      count_iteration();
      frame_ = child_of(parent);
      bind_targets(*frame_, s.targets, item);
      if (eval(*s.filter_expr).truthy()) kept->push_back(item);
    }
    frame_ = parent;
    items = std::move(kept);
  }
  auto info = std::make_shared<LoopInfo>();
  info->items = items;
  info->depth0 = depth0;
  if (s.loop_recursive) info->recursive = &s;
  Value loop = Value::loop(info);
  for (size_t i = 0; i < items->size(); ++i) {
    count_iteration();
    frame_ = child_of(parent);
    info->index0 = static_cast<int64_t>(i);
    bind_targets(*frame_, s.targets, (*items)[i]);
    frame_->set("loop", loop);
    Flow flow = exec(s.body);
    frame_ = parent;
    if (flow == Flow::break_) break;
  }
  if (items->empty() && !s.else_body.empty()) {
    frame_ = child_of(parent);
    exec(s.else_body);
    frame_ = parent;
  }
  return Flow::normal;
}

void Renderer::exec_set(const Stmt& s, Value value) {
  if (!s.text.empty()) {
    Value target = lookup(s.targets[0]);
    if (target.kind() != Kind::namespace_) {
      throw TemplateError(ErrorKind::runtime, "cannot assign attribute on non-namespace object");
    }
    target.object().set(s.text, std::move(value));
    return;
  }
  bind_targets(*frame_, s.targets, value);
}

Value Renderer::make_macro(const Stmt& s, std::shared_ptr<Frame> closure, std::string name) {
  const Stmt* def = &s;
  std::string label = name;
  return Value::function(std::move(label), [def, closure, name](Renderer& r, CallArgs& args) -> Value {
    if (++r.depth_ > r.limits_.max_recursion_depth) {
      throw TemplateError(ErrorKind::limit,
                          "more than " + std::to_string(r.limits_.max_recursion_depth) + " nested macro calls");
    }
    auto frame = child_of(closure);
    const auto& params = def->params;
    Array varargs;
    std::vector<bool> bound(params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < params.size()) {
        frame->set(params[i].first, args.positional[i]);
        bound[i] = true;
      } else {
        varargs.push_back(args.positional[i]);
      }
    }
    Value kwargs = Value::dict();
    for (auto& [k, v] : args.keywords) {
      size_t p = 0;
      while (p < params.size() && params[p].first != k) ++p;
      if (p < params.size()) {
        if (bound[p])
          throw TemplateError(ErrorKind::type, "macro '" + name + "' got multiple values for argument '" + k + "'");
        frame->set(k, v);
        bound[p] = true;
      } else if (k == "caller") {
        frame->set(k, v);
      } else {
        kwargs.object().set(k, v);
      }
    }
    std::shared_ptr<Frame> saved = r.frame_;
    r.frame_ = frame;
    for (size_t p = 0; p < params.size(); ++p) {
      if (bound[p]) continue;
      frame->set(params[p].first, params[p].second ? r.eval(*params[p].second)
                                                   : Value::undefined("parameter " + py_string_repr(params[p].first) +
                                                                      " was not provided"));
    }
    r.frame_ = saved;
    frame->set("varargs", Value::tuple(std::move(varargs)));
    frame->set("kwargs", kwargs);
    std::string out = r.capture(def->body, frame);
    --r.depth_;
    return Value(std::move(out));
  });
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.kind() == Kind::callable) return callee.callable().function(*this, args);
  if (callee.kind() == Kind::loop && callee.loop_info().recursive) {
    // loop(children) inside a recursive for: the same loop over the children, one level deeper.
    if (args.positional.size() != 1) throw TemplateError(ErrorKind::type, "loop() takes exactly one argument");
    if (++depth_ > limits_.max_recursion_depth) {
      throw TemplateError(ErrorKind::limit, "more than " + std::to_string(limits_.max_recursion_depth) +
                                                " nested macro calls or recursive loops");
    }
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    exec_for(*callee.loop_info().recursive, args.positional[0], callee.loop_info().depth0 + 1);
    out_ = saved;
    --depth_;
    return Value(std::move(buffer));
  }
  if (callee.is_undefined()) fail_undefined(callee);
  throw TemplateError(ErrorKind::type, std::string("'") + type_name(callee) + "' object is not callable");
}

}  // namespace specd::jinja
