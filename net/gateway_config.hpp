#pragma once
// The gateway's configuration: every limit and default of `specd serve`, read from a
// TOML file (conf/specd.toml documents each key) with toml++, then overridden by flags.
// Plain values; read once at start-up, then shared read-only by every session.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "compute/thread_policy.hpp"
#include "net/protocol.hpp"

namespace specd::net {

struct GatewayConfig {
  // [server]
  std::string host = "127.0.0.1";
  int32_t port = 8080;             // 0: any free port (printed at start)
  std::string auth_token;          // non-empty: every route needs "Authorization: Bearer <token>"
  std::filesystem::path web_root;  // static files served at /
  // The "model" of OpenAI responses and /v1/models. The loaders below and
  // apply_model_flags() leave it set: when nothing names it, the target directory's name.
  std::string model_name;
  // Threads running the sessions and the engine's actors; 0: one per CPU the process may
  // use (affinity and cgroup quota, compute/thread_policy.hpp), at least 1. io_thread_count().
  int32_t io_threads = 0;
  // Origins whose pages may call the API from a browser (net/cors.hpp): "*" or
  // "https://app.example:8443" entries; empty: no CORS headers, preflights refused.
  std::vector<std::string> cors_origins;
  // The tool-call syntax parsed from chat answers (net/tool_calls.hpp): "auto" reads it
  // from the chat template; or llama3_json, hermes, mistral, json.
  std::string tool_call_format = "auto";

  // [limits]
  int32_t max_connections = 256;
  int32_t max_requests_per_connection = 64;  // WebSocket requests in flight per connection
  // Finished WebSocket request ids a connection remembers: a cancel of one of them is
  // ignored (it crossed the done frame); of an older one, unknown_id. 0 remembers none.
  int32_t finished_ids_per_connection = 256;
  size_t max_frame_bytes = 64 * 1024;   // WebSocket message from a client
  size_t max_body_bytes = 1024 * 1024;  // HTTP request body
  size_t max_header_bytes = 16 * 1024;
  int32_t outbound_queue_frames = 256;  // token frames queued for one client before slow_consumer
  int32_t send_buffer_bytes = 0;        // SO_SNDBUF of accepted sockets; 0: the OS default
  ProtocolLimits protocol;              // max_tokens, K, stop strings, messages, ids; defaults

  // [timeouts]
  double handshake_seconds = 10;
  double ws_idle_seconds = 60;           // no frame from a peer: ping at half, close at the full time
  double http_idle_seconds = 30;         // keep-alive connection waiting for its next request
  double shutdown_deadline_seconds = 5;  // in-flight streams may finish before being cancelled

  // [engine]
  EngineConfig engine;
};

// Defaults for the committed default model pair (models/ in specd's data directory, net/data_dir.hpp).
GatewayConfig default_gateway_config();

// Reads a TOML file over the defaults. Relative paths are taken relative to the file's
// directory. Throws SpecdError: missing_file, malformed_toml (TOML syntax, with the
// line), bad_value (wrong type, out of range or unknown key, naming section.key).
GatewayConfig load_gateway_config(const std::filesystem::path& file);
// Same, from text (tests); relative paths against `base_dir`.
GatewayConfig parse_gateway_config(std::string_view text, const std::filesystem::path& base_dir,
                                   const std::string& source_name);

// `specd serve`'s model flags. --model DIR replaces the configured pair and serves DIR
// alone unless --draft names a draft; --draft DIR alone replaces the draft, and
// `--draft none` serves the target alone. The served name is --model-name, else with
// --model DIR's name (the configured name belonged to the configured target), else the
// configured one.
struct ModelFlags {
  std::filesystem::path model;  // empty: the configured target
  std::string draft;            // a directory, "none", or empty (as configured; none with --model)
  std::string model_name;       // empty: as above
  std::optional<WeightFormat> target_weights, draft_weights;  // nullopt: as configured
};
void apply_model_flags(GatewayConfig& config, const ModelFlags& flags);

// A model directory's name, the default served name: "models/llama-3.2-1b/" -> "llama-3.2-1b";
// a GGUF file's stem: "models/llama-3.2-1b-q8_0.gguf" -> "llama-3.2-1b-q8_0".
std::string model_dir_name(const std::filesystem::path& dir);

// Throws SpecdError(bad_value) for values outside their ranges.
void validate(const GatewayConfig& config);

// The io threads to run: config.io_threads, or for 0 the CPUs `limits` allow (min 1).
int32_t io_thread_count(const GatewayConfig& config, const CpuLimits& limits);

}  // namespace specd::net
