// libFuzzer target for the gateway's protocol parser (net/protocol): any bytes as a
// WebSocket message, as both OpenAI bodies, as the /tokenize, /detokenize and
// /apply-template bodies, and as a model's answer to parse for tool calls (whole and
// streamed in two pieces, which must agree on the calls). Besides crashes and sanitizer reports,
// it checks that every refusal's error frame is valid UTF-8 JSON (a client would drop
// the connection otherwise) and that parsed values respect the limits or are refused by the engine's validation.
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/base/errors.hpp"
#include "net/protocol.hpp"
#include "net/tokenize_body.hpp"
#include "net/tool_calls.hpp"

using namespace specd;
using namespace specd::net;

namespace {

constexpr int32_t kKMax = 8;  // the engine's bound on K the requests are checked against

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

// The parser bounds what the gateway limits; the engine's validation (which a request
// meets next) either refuses a value with bad_value or leaves one in range.
void check_params(const GenerateParams& p, const ProtocolLimits& limits) {
  GenerateRequest r = p.request;
  require(r.max_tokens >= 0 && r.max_tokens <= limits.max_tokens_limit);
  if (r.max_tokens == 0) r.max_tokens = 1;  // the rest of the context, resolved by the engine before validation
  require(r.stop.size() <= limits.max_stop_strings);
  require(r.prompt.empty() || r.messages.empty());  // at most one input
  const std::vector<int32_t> ids{1};
  try {
    validate_request(r, ids, {100, 1 << 20, kKMax});
  } catch (const SpecdError& e) {
    require(e.code() == ErrorCode::bad_value);
    return;
  }
  require(std::isfinite(r.sampling.temperature) && r.sampling.temperature >= 0);
  require(r.sampling.top_p > 0 && r.sampling.top_p <= 1);
  require(!r.spec.enabled || (r.spec.k >= 0 && r.spec.k <= kKMax));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ProtocolLimits limits;
  ClientMessage message = parse_client_message(text, limits);
  if (auto* e = std::get_if<ProtocolError>(&message)) check_error_frame(*e);
  if (auto* p = std::get_if<GenerateParams>(&message)) {
    require(!p->request.id.empty() && p->request.id.size() <= limits.max_id_bytes);
    check_params(*p, limits);
  }
  for (OpenAiRoute route : {OpenAiRoute::completions, OpenAiRoute::chat_completions}) {
    auto body = parse_openai_body(text, route, limits);
    if (auto* e = std::get_if<ProtocolError>(&body))
      check_error_frame(*e);
    else
      check_params(std::get<GenerateParams>(body), limits);
  }
  // The utility bodies: parsed, or refused with an error frame a client can read.
  auto tokenize = parse_tokenize_body(text, limits);
  if (auto* e = std::get_if<ProtocolError>(&tokenize)) check_error_frame(*e);
  auto chat = parse_chat_body(text, limits);
  if (auto* e = std::get_if<ProtocolError>(&chat)) check_error_frame(*e);
  auto detokenize = parse_detokenize_body(text);
  if (auto* e = std::get_if<ProtocolError>(&detokenize)) check_error_frame(*e);
  for (ToolCallFormat format :
       {ToolCallFormat::llama3_json, ToolCallFormat::hermes, ToolCallFormat::mistral, ToolCallFormat::json}) {
    const ParsedOutput whole = parse_tool_calls(format, text);
    ToolCallStream stream(format);
    const StreamStep first = stream.feed(text.substr(0, size / 2));
    const StreamStep second = stream.feed(text.substr(size / 2));
    const std::string released = first.content + second.content;
    const StreamStep end = stream.finish();
    // Every call the whole answer holds was started; a streamed head may belong to a
    // call the whole parse later refuses.
    require(stream.calls_started() >= whole.calls.size());
    if (stream.calls_started() == 0) require(released + end.content == text);  // no text is lost or invented
  }
  return 0;
}
