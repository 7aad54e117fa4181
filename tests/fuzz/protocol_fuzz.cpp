// libFuzzer target for the gateway's protocol parser (net/protocol): any bytes as a
// WebSocket message and as both OpenAI bodies. Besides crashes and sanitizer reports,
// it checks that every refusal's error frame is valid UTF-8 JSON (a client would drop
// the connection otherwise) and that parsed values respect the limits.
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/protocol.hpp"

using namespace specd;
using namespace specd::net;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

void check_error_frame(const ProtocolError& e) {
  const std::string frame = error_frame(e);
  require(valid_utf8(frame));
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  require(parser.parse(frame).get(root) == simdjson::SUCCESS);
}

void check_params(const GenerateParams& p, const ProtocolLimits& limits) {
  require(p.max_tokens >= 1 && p.max_tokens <= limits.max_tokens_limit);
  require(std::isfinite(p.sampling.temperature) && p.sampling.temperature >= 0);
  require(p.sampling.top_p > 0 && p.sampling.top_p <= 1);
  require(p.spec.k >= 0 && p.spec.k <= limits.k_max);
  require(p.stop.size() <= limits.max_stop_strings);
  require(p.prompt.has_value() != !p.messages.empty());  // exactly one input
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ProtocolLimits limits;
  ClientMessage message = parse_client_message(text, limits);
  if (auto* e = std::get_if<ProtocolError>(&message)) check_error_frame(*e);
  if (auto* p = std::get_if<GenerateParams>(&message)) {
    require(!p->id.empty() && p->id.size() <= limits.max_id_bytes);
    check_params(*p, limits);
  }
  for (OpenAiRoute route : {OpenAiRoute::completions, OpenAiRoute::chat_completions}) {
    auto body = parse_openai_body(text, route, limits);
    if (auto* e = std::get_if<ProtocolError>(&body))
      check_error_frame(*e);
    else
      check_params(std::get<GenerateParams>(body), limits);
  }
  return 0;
}
