#pragma once
// The generation routes of the HTTP session: POST /v1/completions and
// /v1/chat/completions in OpenAI's wire format. stream:true answers with SSE
// `data:` chunks (chunked transfer encoding) ending with `data: [DONE]`; stream:false
// with one JSON body. The request's bursts reach the route through a ClientStream
// (net/client_stream.hpp: the bounded queue, `slow_consumer`, shutdown).
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/status.hpp>

#include <string>

#include "actors/engine.hpp"
#include "net/http_session.hpp"
#include "net/protocol.hpp"

namespace specd::net {

class ClientStream;
class Gateway;

// What the route needs from its session; the session outlives the call.
struct GenerationContext {
  boost::beast::tcp_stream& stream;
  Gateway& gateway;
  ClientStream*& active;          // set while the request runs, for the shutdown notice
  std::string_view allow_origin;  // Access-Control-Allow-Origin of the responses; empty: none
};

// Serves one generation request; returns whether the connection may stay open.
boost::asio::awaitable<bool> serve_openai(GenerationContext context, const HttpRequest& request, OpenAiRoute route);

// Writes a complete JSON response (with Access-Control-Allow-Origin when
// `allow_origin` is set); false when the write failed.
boost::asio::awaitable<bool> write_json_response(boost::beast::tcp_stream& stream, const HttpRequest& request,
                                                 boost::beast::http::status status, std::string body,
                                                 std::string_view allow_origin = {});

}  // namespace specd::net
