#include "net/gateway_config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <variant>
#include <vector>

#include "engine/base/byte_size.hpp"
#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "net/cors.hpp"
#include "net/data_dir.hpp"
#include "net/tool_calls.hpp"

namespace specd::net {

namespace {

struct SizeRef {
  size_t* value;
};
struct PathRef {
  std::filesystem::path* value;
};
struct StringListRef {  // an array of strings
  std::vector<std::string>* value;
};
struct BytesRef {  // an integer, or a string with a unit ("4GiB")
  int64_t* value;
};
using Target = std::variant<int32_t*, int64_t*, double*, bool*, std::string*, SizeRef, PathRef, BytesRef, WeightFormat*,
                            StringListRef>;

struct Key {
  const char* section;
  const char* name;
  Target target;
};

std::vector<Key> keys_of(GatewayConfig& c) {
  return {
      {"server", "host", &c.host},
      {"server", "port", &c.port},
      {"server", "auth_token", &c.auth_token},
      {"server", "web_root", PathRef{&c.web_root}},
      {"server", "model_name", &c.model_name},
      {"server", "io_threads", &c.io_threads},
      {"server", "cors_origins", StringListRef{&c.cors_origins}},
      {"server", "tool_call_format", &c.tool_call_format},
      {"limits", "max_connections", &c.max_connections},
      {"limits", "max_requests_per_connection", &c.max_requests_per_connection},
      {"limits", "finished_ids_per_connection", &c.finished_ids_per_connection},
      {"limits", "max_frame_bytes", SizeRef{&c.max_frame_bytes}},
      {"limits", "max_body_bytes", SizeRef{&c.max_body_bytes}},
      {"limits", "max_header_bytes", SizeRef{&c.max_header_bytes}},
      {"limits", "outbound_queue_frames", &c.outbound_queue_frames},
      {"limits", "send_buffer_bytes", &c.send_buffer_bytes},
      {"limits", "max_tokens", &c.protocol.max_tokens_limit},
      {"limits", "max_stop_strings", SizeRef{&c.protocol.max_stop_strings}},
      {"limits", "max_logit_bias", SizeRef{&c.protocol.max_logit_bias}},
      {"limits", "max_messages", SizeRef{&c.protocol.max_messages}},
      {"limits", "max_id_bytes", SizeRef{&c.protocol.max_id_bytes}},
      {"limits", "max_n", &c.protocol.max_n},
      {"timeouts", "handshake_seconds", &c.handshake_seconds},
      {"timeouts", "ws_idle_seconds", &c.ws_idle_seconds},
      {"timeouts", "http_idle_seconds", &c.http_idle_seconds},
      {"timeouts", "shutdown_deadline_seconds", &c.shutdown_deadline_seconds},
      {"defaults", "max_tokens", &c.protocol.default_max_tokens},
      {"defaults", "temperature", &c.protocol.default_temperature},
      {"engine", "target", PathRef{&c.engine.target_dir}},
      {"engine", "draft", PathRef{&c.engine.draft_dir}},
      {"engine", "target_weights", &c.engine.target_weights},
      {"engine", "draft_weights", &c.engine.draft_weights},
      {"engine", "chat_template", PathRef{&c.engine.chat_template}},
      {"engine", "max_batch", &c.engine.max_batch},
      {"engine", "max_seq_len", &c.engine.sequence.max_seq_len},
      {"engine", "max_waiting", &c.engine.max_waiting},
      {"engine", "prefill_chunk", &c.engine.prefill_chunk},
      {"engine", "prefill_slowdown", &c.engine.prefill_slowdown},
      {"engine", "kv_cache_memory", BytesRef{&c.engine.kv_cache_memory}},
      {"engine", "grammar_cache_memory", BytesRef{&c.engine.grammar_cache_memory}},
      {"engine", "kv_block_size", &c.engine.kv_block_size},
      {"engine", "prefix_cache", &c.engine.prefix_cache},
      {"engine", "burst_queue", &c.engine.burst_queue},
      {"engine", "threads", &c.engine.threads},
      {"engine", "target_threads", &c.engine.target_threads},
      {"engine", "draft_threads", &c.engine.draft_threads},
      {"engine", "overlap", &c.engine.overlap},
      {"engine", "k_max", &c.engine.sequence.k_max},
      {"trace", "enabled", &c.engine.trace},
      {"trace", "capacity", &c.engine.trace_capacity},
  };
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw SpecdError(ErrorCode::bad_value, where + ": " + what);
}

int64_t integer_of(const toml::node& node, const std::string& where) {
  auto v = node.value<int64_t>();
  if (!node.is_integer() || !v) bad(where, "must be an integer");
  return *v;
}

void assign(const toml::node& node, Target target, const std::string& where, const std::filesystem::path& base) {
  std::visit(
      [&](auto ref) {
        using T = decltype(ref);
        if constexpr (std::is_same_v<T, int32_t*>) {
          const int64_t v = integer_of(node, where);
          if (v < INT32_MIN || v > INT32_MAX) bad(where, "out of range");
          *ref = static_cast<int32_t>(v);
        } else if constexpr (std::is_same_v<T, int64_t*>) {
          *ref = integer_of(node, where);
        } else if constexpr (std::is_same_v<T, SizeRef>) {
          const int64_t v = integer_of(node, where);
          if (v < 0) bad(where, "must be >= 0");
          *ref.value = static_cast<size_t>(v);
        } else if constexpr (std::is_same_v<T, BytesRef>) {
          if (node.is_string()) {
            *ref.value = parse_byte_size(*node.value<std::string>(), where);
          } else {
            const int64_t v = integer_of(node, where);
            if (v < 0) bad(where, "must be >= 0");
            *ref.value = v;
          }
        } else if constexpr (std::is_same_v<T, double*>) {
          auto v = node.value<double>();
          if (!(node.is_floating_point() || node.is_integer()) || !v) bad(where, "must be a number");
          *ref = *v;
        } else if constexpr (std::is_same_v<T, bool*>) {
          if (!node.is_boolean()) bad(where, "must be true or false");
          *ref = *node.value<bool>();
        } else if constexpr (std::is_same_v<T, WeightFormat*>) {
          const auto format = node.is_string() ? parse_weight_format(*node.value<std::string>()) : std::nullopt;
          if (!format) bad(where, "must be \"stored\", \"int8\" or \"int4\"");
          *ref = *format;
        } else if constexpr (std::is_same_v<T, StringListRef>) {
          const toml::array* list = node.as_array();
          if (!list) bad(where, "must be an array of strings");
          ref.value->clear();
          for (const toml::node& item : *list) {
            if (!item.is_string()) bad(where, "must be an array of strings");
            ref.value->push_back(*item.value<std::string>());
          }
        } else if constexpr (std::is_same_v<T, std::string*>) {
          if (!node.is_string()) bad(where, "must be a string");
          *ref = *node.value<std::string>();
        } else {
          if (!node.is_string()) bad(where, "must be a string (a path)");
          std::filesystem::path p = *node.value<std::string>();
          *ref.value = p.empty() || p.is_absolute() ? p : (base / p).lexically_normal();
        }
      },
      target);
}

void apply(const toml::table& root, GatewayConfig& c, const std::filesystem::path& base, const std::string& source) {
  std::vector<Key> keys = keys_of(c);
  std::set<std::string> known_sections;
  for (const Key& k : keys) known_sections.insert(k.section);
  for (auto&& [section_name, section] : root) {
    const std::string s(section_name.str());
    if (!known_sections.count(s) || !section.is_table()) bad(source, "unknown section [" + s + "]");
    for (auto&& [key_name, node] : *section.as_table()) {
      const std::string where = source + ": " + s + "." + std::string(key_name.str());
      auto it = std::find_if(keys.begin(), keys.end(),
                             [&](const Key& k) { return s == k.section && key_name.str() == k.name; });
      if (it == keys.end()) bad(where, "unknown key");
      assign(node, it->target, where, base);
    }
  }
}

void positive(double v, const char* name) {
  if (!(v > 0) || !std::isfinite(v))
    throw SpecdError(ErrorCode::bad_value, std::string("config: ") + name + " must be > 0");
}

}  // namespace

GatewayConfig default_gateway_config() {
  GatewayConfig c;
  const std::filesystem::path& data = data_dir();
  c.web_root = data / "tools" / "web";
  c.engine.target_dir = data / "models" / "target";
  c.engine.draft_dir = data / "models" / "draft";
  c.engine.trace = true;  // a server keeps its recent spans for GET /v1/trace ([trace])
  c.model_name = model_dir_name(c.engine.target_dir);
  return c;
}

GatewayConfig parse_gateway_config(std::string_view text, const std::filesystem::path& base_dir,
                                   const std::string& source_name) {
  GatewayConfig c = default_gateway_config();
  c.model_name.clear();  // the file's own, or its target's name
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << source_name << ":" << e.source().begin.line << ": " << e.description();
    throw SpecdError(ErrorCode::malformed_toml, where.str());
  }
  apply(root, c, base_dir, source_name);
  if (c.model_name.empty()) c.model_name = model_dir_name(c.engine.target_dir);
  validate(c);
  return c;
}

GatewayConfig load_gateway_config(const std::filesystem::path& file) {
  return parse_gateway_config(read_whole_file(file, "config"), file.parent_path(), file.string());
}

void apply_model_flags(GatewayConfig& c, const ModelFlags& flags) {
  if (!flags.model.empty()) {
    c.engine.target_dir = flags.model;
    c.engine.draft_dir.clear();
    c.model_name = model_dir_name(flags.model);
  }
  if (flags.draft == "none") {
    c.engine.draft_dir.clear();
  } else if (!flags.draft.empty()) {
    c.engine.draft_dir = flags.draft;
  }
  if (!flags.model_name.empty()) c.model_name = flags.model_name;
  if (flags.target_weights) c.engine.target_weights = *flags.target_weights;
  if (flags.draft_weights) c.engine.draft_weights = *flags.draft_weights;
}

std::string model_dir_name(const std::filesystem::path& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // "dir/" ends in an empty name
  if (is_gguf_path(p)) return p.stem().string();                      // "target-q8_0.gguf" -> "target-q8_0"
  return p.filename().string();
}

void validate(const GatewayConfig& c) {
  if (c.port < 0 || c.port > 65535) throw SpecdError(ErrorCode::bad_value, "config: port must be in [0, 65535]");
  if (c.io_threads < 0 || c.io_threads > 1024)
    throw SpecdError(ErrorCode::bad_value, "config: io_threads must be in [0, 1024]");
  for (const std::string& origin : c.cors_origins) {
    if (const std::string problem = cors_origin_problem(origin); !problem.empty())
      throw SpecdError(ErrorCode::bad_value, "config: server.cors_origins entry \"" + origin + "\" " + problem);
  }
  if (c.tool_call_format != "auto" && !parse_tool_call_format(c.tool_call_format)) {
    throw SpecdError(ErrorCode::bad_value,
                     "config: server.tool_call_format must be auto, llama3_json, hermes, mistral or json");
  }
  positive(c.max_connections, "max_connections");
  positive(c.max_requests_per_connection, "max_requests_per_connection");
  positive(static_cast<double>(c.max_frame_bytes), "max_frame_bytes");
  positive(static_cast<double>(c.max_body_bytes), "max_body_bytes");
  positive(static_cast<double>(c.max_header_bytes), "max_header_bytes");
  positive(c.outbound_queue_frames, "outbound_queue_frames");
  if (c.finished_ids_per_connection < 0) {
    throw SpecdError(ErrorCode::bad_value, "config: finished_ids_per_connection must be >= 0");
  }
  if (c.send_buffer_bytes < 0) throw SpecdError(ErrorCode::bad_value, "config: send_buffer_bytes must be >= 0");
  positive(c.protocol.max_tokens_limit, "limits.max_tokens");
  positive(static_cast<double>(c.protocol.max_id_bytes), "max_id_bytes");
  positive(c.protocol.max_n, "max_n");
  positive(c.handshake_seconds, "handshake_seconds");
  positive(c.ws_idle_seconds, "ws_idle_seconds");
  positive(c.http_idle_seconds, "http_idle_seconds");
  if (!(c.shutdown_deadline_seconds >= 0))
    throw SpecdError(ErrorCode::bad_value, "config: shutdown_deadline_seconds must be >= 0");
  if (c.protocol.default_max_tokens < 0 || c.protocol.default_max_tokens > c.protocol.max_tokens_limit) {
    throw SpecdError(ErrorCode::bad_value,
                     "config: defaults.max_tokens must be in [0, limits.max_tokens] (0: the rest of the context)");
  }
  if (c.engine.kv_block_size < 16 || c.engine.kv_block_size > 1024 || c.engine.kv_block_size % 16 != 0) {
    throw SpecdError(ErrorCode::bad_value, "config: engine.kv_block_size must be a multiple of 16 in [16, 1024]");
  }
  if (c.engine.sequence.max_seq_len < 0)
    throw SpecdError(ErrorCode::bad_value, "config: engine.max_seq_len must be >= 0 (0: from the model)");
  if (c.engine.max_batch < 1) throw SpecdError(ErrorCode::bad_value, "config: engine.max_batch must be >= 1");
  if (c.engine.grammar_cache_memory < 1)
    throw SpecdError(ErrorCode::bad_value, "config: engine.grammar_cache_memory must be >= 1 byte");
  if (c.engine.prefill_chunk < 0) throw SpecdError(ErrorCode::bad_value, "config: engine.prefill_chunk must be >= 0");
  if (!(c.engine.prefill_slowdown == 0 || c.engine.prefill_slowdown > 1))
    throw SpecdError(ErrorCode::bad_value, "config: engine.prefill_slowdown must be 0 (off) or > 1");
  if (!(c.protocol.default_temperature >= 0 && c.protocol.default_temperature <= 100)) {
    throw SpecdError(ErrorCode::bad_value, "config: defaults.temperature must be in [0, 100]");
  }
}

int32_t io_thread_count(const GatewayConfig& c, const CpuLimits& limits) {
  return c.io_threads > 0 ? c.io_threads : std::max(1, limits.usable());
}

}  // namespace specd::net
