#pragma once
// The routes that answer from the model's tokenizer and chat template without
// generating: POST /tokenize, /detokenize, /apply-template (llama.cpp's and vLLM's
// names and bodies, net/tokenize_body.hpp), and GET /v1/models with the context length
// (vLLM's max_model_len, llama.cpp's meta). Each returns the status and JSON body;
// errors are OpenAI error bodies with their code. Any thread (the engine's tokenizer
// and template are immutable).
#include <boost/beast/http/status.hpp>

#include <string>
#include <string_view>

#include "actors/engine.hpp"
#include "net/protocol.hpp"

namespace specd::net {

struct RouteReply {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string body;
};

// {"tokens":[...],"count":N,"max_model_len":M}
RouteReply tokenize_reply(const Engine& engine, std::string_view body, const ProtocolLimits& limits);
// {"content":"...","prompt":"..."} (llama.cpp's and vLLM's names); an id outside the
// vocabulary is refused (bad_value) naming its index.
RouteReply detokenize_reply(const Engine& engine, std::string_view body);
// {"prompt":"..."}: the conversation rendered as a chat request's prompt would be.
RouteReply apply_template_reply(const Engine& engine, std::string_view body, const ProtocolLimits& limits);
// GET /v1/models: the served model with max_model_len and meta {n_ctx, n_vocab}.
std::string models_body(const std::string& model, const Engine& engine);

}  // namespace specd::net
