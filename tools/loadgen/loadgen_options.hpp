#pragma once
// loadgen's command line: where the server is, how many clients, what each one asks for.
// Plain values, parsed once on the main thread.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specd::loadgen {

enum class Transport { ws, sse };

struct LoadgenOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string token;  // bearer token, when the server requires one
  Transport transport = Transport::ws;
  int32_t clients = 8;        // concurrent connections (one level without --ramp)
  std::vector<int32_t> ramp;  // client counts run one after another
  bool keep_going = false;    // ramp on past a level with errors
  int32_t requests = 4;       // requests per client, one after another
  int32_t turns = 0;          // > 0: each client holds a conversation of this many turns (replaces requests)
  std::string prompt = "ROMEO:";
  std::string turn_prompt;  // the user message of turns 2..; empty: the prompt again
  bool chat = false;        // send the prompt as a user message (chat template)
  int32_t max_tokens = 64;
  bool ignore_eos = false;  // generate past EOS: every request runs to max_tokens
  double temperature = 0.0;
  double top_p = 1.0;
  int32_t top_k = 0;
  std::optional<uint64_t> seed;  // per request: seed + request number
  bool speculative = true;
  std::string k = "4";     // 1..16 or "auto"
  double timeout_s = 300;  // per level
  std::string report;      // --report FILE.html, when given
  std::string session;     // --session PREFIX: client i keys its requests PREFIX-i (session_key)
  bool answers = false;    // count the answer texts in the report

  int32_t requests_per_client() const { return turns > 0 ? turns : requests; }
  // Turn 2..'s user message.
  const std::string& next_turn_prompt() const { return turn_prompt.empty() ? prompt : turn_prompt; }
};

class Conversation;

// Parses argv; prints help or a usage error and exits as CLI11 does.
LoadgenOptions parse_options(int argc, char** argv);

// The JSON of one request: a WebSocket "generate" frame (with `id`) or, for the SSE
// transport, the body of POST /v1/completions or /v1/chat/completions.
std::string request_json(const LoadgenOptions& options, const std::string& id, int64_t request_number);
// The same for a conversation's current turn: its messages with --chat, else its transcript as the prompt.
std::string request_json(const LoadgenOptions& options, const std::string& id, int64_t request_number,
                         const Conversation& conversation);

// "/v1/completions" or "/v1/chat/completions" (SSE transport).
std::string sse_target(const LoadgenOptions& options);

// Client `client_index`'s conversation key, sent as the X-Session-Id header (SSE) or the
// ?session= query of the WebSocket handshake, so a proxy hashing on it keeps the
// client's requests on one replica; empty without --session.
std::string session_key(const LoadgenOptions& options, int32_t client_index);
// The WebSocket handshake target: /v1/ws, with ?session=KEY (percent-encoded) when keyed.
std::string ws_target(const LoadgenOptions& options, int32_t client_index);

}  // namespace specd::loadgen
