#include "net/request_bridge.hpp"

#include "engine/base/errors.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd::net {

GenerateRequest make_engine_request(const GenerateParams& p, const ChatTemplate* chat, const Tokenizer& tokenizer,
                                    std::string engine_id) {
  GenerateRequest r;
  r.id = std::move(engine_id);
  if (p.prompt) {
    r.prompt = *p.prompt;
    if (r.prompt.empty()) throw SpecdError(ErrorCode::bad_value, "the prompt is empty");
  } else {
    if (!chat) throw SpecdError(ErrorCode::unknown_chat_template, "the model has no chat template; send a prompt");
    try {
      r.prompt_ids = chat->encode(p.messages, tokenizer);
    } catch (const SpecdError& e) {
      throw SpecdError(ErrorCode::bad_value, e.what());
    }
  }
  r.sampling = p.sampling;
  r.max_tokens = p.max_tokens;
  r.stop = p.stop;
  r.spec = p.spec;
  r.ignore_eos = p.ignore_eos;
  return r;
}

RequestTiming::RequestTiming(Metrics& metrics, Route route, std::string client_id, const GatewayHooks& hooks)
    : metrics_(metrics), route_(route), client_id_(std::move(client_id)), hooks_(hooks) {}

void RequestTiming::burst(const Burst& b) {
  const auto now = Clock::now();
  if (hooks_.on_burst_ready) hooks_.on_burst_ready(client_id_, bursts_);
  ++bursts_;
  if (b.token_ids.empty()) return;  // held-back text only
  if (!last_burst_) {
    metrics_.time_to_first_token(std::chrono::duration<double>(now - submitted_).count());
  } else {
    const double per_token =
        std::chrono::duration<double>(now - *last_burst_).count() / static_cast<double>(b.token_ids.size());
    for (size_t i = 0; i < b.token_ids.size(); ++i) metrics_.inter_token(per_token);
  }
  last_burst_ = now;
}

void RequestTiming::done(const GenerateResult& r) {
  if (r.error) {
    metrics_.request_error(route_, r.error->code);
    return;
  }
  metrics_.end_to_end(std::chrono::duration<double>(Clock::now() - submitted_).count());
  metrics_.request_finished(route_, r.finish_reason);
}

}  // namespace specd::net
