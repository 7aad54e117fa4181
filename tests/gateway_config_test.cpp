// The gateway's TOML configuration (net/gateway_config): the committed conf/specd.toml
// loads, values override defaults, relative paths resolve against the file, and wrong
// types, unknown keys, bad ranges and syntax errors are refused naming the key; the
// served model name and what `specd serve --model/--draft/--model-name` change.
#include <doctest/doctest.h>

#include "engine/base/errors.hpp"
#include "net/cors.hpp"
#include "net/gateway_config.hpp"

using namespace specd;
using namespace specd::net;

namespace {

std::string refusal(std::string_view text) {
  try {
    parse_gateway_config(text, "/etc/specd", "test.toml");
  } catch (const SpecdError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("the committed conf/specd.toml loads with its documented values") {
  const std::filesystem::path conf = std::filesystem::path(SPECD_SOURCE_DIR) / "conf" / "specd.toml";
  GatewayConfig c = load_gateway_config(conf);
  CHECK(c.host == "127.0.0.1");
  CHECK(c.port == 8080);
  CHECK(c.auth_token.empty());
  CHECK(c.web_root == std::filesystem::path(SPECD_SOURCE_DIR) / "tools" / "web");
  CHECK(c.engine.target_dir == std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target");
  CHECK(c.engine.draft_dir == std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "draft");
  CHECK(c.max_connections == 256);
  CHECK(c.max_frame_bytes == 65536);
  CHECK(c.finished_ids_per_connection == 256);
  CHECK(c.protocol.max_tokens_limit == 4096);
  CHECK(c.protocol.default_max_tokens == 0);  // the rest of the context
  CHECK(c.engine.sequence.max_seq_len == 0);  // from the models
  CHECK(c.cors_origins.empty());              // CORS off
  CHECK(c.engine.sequence.k_max == 8);
  CHECK(c.shutdown_deadline_seconds == 5);
  CHECK(c.io_threads == 0);  // automatic: one per usable CPU
}

TEST_CASE("io_threads: 0 is one per CPU the process may use, at least 1; a number is taken as given") {
  GatewayConfig c = default_gateway_config();
  CHECK(c.io_threads == 0);
  CHECK(io_thread_count(c, CpuLimits{4, std::nullopt}) == 4);
  CHECK(io_thread_count(c, CpuLimits{8, 2.5}) == 2);  // the cgroup quota's whole CPUs
  CHECK(io_thread_count(c, CpuLimits{4, 0.5}) == 1);
  CHECK(io_thread_count(c, CpuLimits{0, std::nullopt}) == 1);
  CHECK(io_thread_count(c, read_cpu_limits()) == read_cpu_limits().usable());
  c = parse_gateway_config("[server]\nio_threads = 3\n", "/etc/specd", "test.toml");
  CHECK(io_thread_count(c, CpuLimits{1, std::nullopt}) == 3);
}

TEST_CASE("values override defaults; relative paths resolve against the file's directory") {
  GatewayConfig c = parse_gateway_config(
      "[server]\nport = 9000\nauth_token = \"t\"\nweb_root = \"web\"\n"
      "[limits]\nmax_frame_bytes = 1024\nfinished_ids_per_connection = 0\n[timeouts]\nws_idle_seconds = 2.5\n"
      "[engine]\ndraft = \"\"\nk_max = 4\nmax_seq_len = 512\n[defaults]\ntemperature = 0\n",
      "/etc/specd", "test.toml");
  CHECK(c.port == 9000);
  CHECK(c.auth_token == "t");
  CHECK(c.web_root == std::filesystem::path("/etc/specd/web"));
  CHECK(c.max_frame_bytes == 1024);
  CHECK(c.finished_ids_per_connection == 0);
  CHECK(c.ws_idle_seconds == 2.5);
  CHECK(c.engine.draft_dir.empty());
  CHECK(c.engine.sequence.k_max == 4);
  CHECK(c.engine.sequence.max_seq_len == 512);
  CHECK(parse_gateway_config("[engine]\nchat_template = \"tmpl/chat.jinja\"\n", "/etc/specd", "test.toml")
            .engine.chat_template == std::filesystem::path("/etc/specd/tmpl/chat.jinja"));
  CHECK(c.protocol.default_temperature == 0.0);
  CHECK(c.max_connections == 256);  // untouched default
}

TEST_CASE("server.cors_origins: an array of origins or \"*\"; the header echoes a listed origin") {
  GatewayConfig c = parse_gateway_config(
      "[server]\ncors_origins = [\"https://app.example\", \"http://localhost:5173\"]\n", "/etc/specd", "test.toml");
  REQUIRE(c.cors_origins.size() == 2);
  CHECK(cors_allow_origin(c.cors_origins, "https://app.example") == "https://app.example");
  CHECK(cors_allow_origin(c.cors_origins, "HTTPS://APP.example") == "HTTPS://APP.example");
  CHECK(cors_allow_origin(c.cors_origins, "http://localhost:5173") == "http://localhost:5173");
  CHECK(cors_allow_origin(c.cors_origins, "http://localhost:5174") == "");
  CHECK(cors_allow_origin(c.cors_origins, "") == "");
  CHECK(cors_allow_origin({"*"}, "https://any.example") == "*");
  CHECK(cors_allow_origin({}, "https://app.example") == "");
}

TEST_CASE("the KV cache's memory is a byte size with a unit, or an integer") {
  auto memory = [](const char* value) {
    return parse_gateway_config(std::string("[engine]\nkv_cache_memory = ") + value + "\n", "/etc/specd", "test.toml")
        .engine.kv_cache_memory;
  };
  CHECK(memory("\"4GiB\"") == 4LL << 30);
  CHECK(memory("\"512 MiB\"") == 512LL << 20);
  CHECK(memory("\"1.5GB\"") == 1'500'000'000LL);
  CHECK(memory("\"1.5g\"") == 3LL << 29);
  CHECK(memory("123456") == 123456);
  const auto grammars = [](const char* value) {
    return parse_gateway_config(std::string("[engine]\ngrammar_cache_memory = ") + value + "\n", "/etc/specd", "t.toml")
        .engine.grammar_cache_memory;
  };
  CHECK(grammars("\"64MiB\"") == 64LL << 20);
  CHECK(grammars("5000") == 5000);
  CHECK(parse_gateway_config("", "/etc/specd", "t.toml").engine.grammar_cache_memory == 256LL << 20);
  CHECK(memory("0") == 0);
  const GatewayConfig c = parse_gateway_config("[engine]\nprefix_cache = false\nkv_block_size = 32\n", "/", "t");
  CHECK_FALSE(c.engine.prefix_cache);
  CHECK(c.engine.kv_block_size == 32);
  CHECK(default_gateway_config().engine.prefix_cache);
}

TEST_CASE("bad configurations are refused naming the key") {
  CHECK(refusal("[server]\nport = \"80\"\n") == "bad_value: test.toml: server.port: must be an integer");
  CHECK(refusal("[server]\nprot = 80\n") == "bad_value: test.toml: server.prot: unknown key");
  CHECK(refusal("[srv]\nport = 80\n") == "bad_value: test.toml: unknown section [srv]");
  CHECK(refusal("[server]\nport = 70000\n") == "bad_value: config: port must be in [0, 65535]");
  CHECK(refusal("[server]\nio_threads = 4\n") == "accepted");
  CHECK(refusal("[server]\nio_threads = -1\n") == "bad_value: config: io_threads must be in [0, 1024]");
  CHECK(refusal("[limits]\nmax_frame_bytes = -1\n") == "bad_value: test.toml: limits.max_frame_bytes: must be >= 0");
  CHECK(refusal("[limits]\nmax_connections = 0\n") == "bad_value: config: max_connections must be > 0");
  CHECK(refusal("[limits]\nfinished_ids_per_connection = -1\n") ==
        "bad_value: config: finished_ids_per_connection must be >= 0");
  CHECK(refusal("[defaults]\nmax_tokens = 5000\n") ==
        "bad_value: config: defaults.max_tokens must be in [0, limits.max_tokens] (0: the rest of the context)");
  CHECK(refusal("[defaults]\nmax_tokens = -1\n") ==
        "bad_value: config: defaults.max_tokens must be in [0, limits.max_tokens] (0: the rest of the context)");
  CHECK(refusal("[engine]\noverlap = 1\n") == "bad_value: test.toml: engine.overlap: must be true or false");
  CHECK(refusal("[engine]\nkv_cache_memory = \"4 lots\"\n")
            .rfind("bad_value: test.toml: engine.kv_cache_memory: '4 lots' is not a byte size", 0) == 0);
  CHECK(refusal("[engine]\nkv_cache_memory = -5\n") == "bad_value: test.toml: engine.kv_cache_memory: must be >= 0");
  CHECK(refusal("[engine]\ngrammar_cache_memory = 0\n") ==
        "bad_value: config: engine.grammar_cache_memory must be >= 1 byte");
  CHECK(refusal("[engine]\nkv_block_size = 0\n") ==
        "bad_value: config: engine.kv_block_size must be a multiple of 16 in [16, 1024]");
  CHECK(refusal("[engine]\nkv_block_size = 24\n") ==
        "bad_value: config: engine.kv_block_size must be a multiple of 16 in [16, 1024]");
  CHECK(refusal("[engine]\nmax_seq_len = 0\n") == "accepted");
  CHECK(refusal("[engine]\nmax_seq_len = -1\n") ==
        "bad_value: config: engine.max_seq_len must be >= 0 (0: from the model)");
  CHECK(refusal("[server]\ntool_call_format = \"hermes\"\n") == "accepted");
  CHECK(refusal("[server]\ntool_call_format = \"qwen\"\n") ==
        "bad_value: config: server.tool_call_format must be auto, llama3_json, hermes, mistral or json");
  CHECK(refusal("[engine]\nchat_template = \"t.jinja\"\n") == "accepted");
  CHECK(refusal("[server]\ncors_origins = \"*\"\n") ==
        "bad_value: test.toml: server.cors_origins: must be an array of strings");
  CHECK(refusal("[server]\ncors_origins = [1]\n") ==
        "bad_value: test.toml: server.cors_origins: must be an array of strings");
  CHECK(refusal("[server]\ncors_origins = [\"app.example\"]\n") ==
        "bad_value: config: server.cors_origins entry \"app.example\" must be \"*\" or start with http:// or "
        "https://");
  CHECK(refusal("[server]\ncors_origins = [\"https://app.example/chat\"]\n") ==
        "bad_value: config: server.cors_origins entry \"https://app.example/chat\" must be scheme://host[:port] "
        "without a path (as a browser's Origin header)");
  CHECK(refusal("[engine]\nprefix_cache = \"yes\"\n") ==
        "bad_value: test.toml: engine.prefix_cache: must be true or false");
  CHECK(refusal("[server\nport = 1\n").rfind("malformed_toml: test.toml:1: ", 0) == 0);
  CHECK(refusal("[server]\nport = = 1\n").rfind("malformed_toml: test.toml:2: ", 0) == 0);
  CHECK_THROWS_WITH_AS(load_gateway_config("/nonexistent/specd.toml"),
                       "missing_file: cannot read config /nonexistent/specd.toml", SpecdError);
}

TEST_CASE("the served model name: the config's, else its target directory's name") {
  CHECK(load_gateway_config(std::filesystem::path(SPECD_SOURCE_DIR) / "conf" / "specd.toml").model_name ==
        "specd-tiny");
  CHECK(parse_gateway_config("[engine]\ntarget = \"/m/llama-3.2-1b/\"\n", "/etc/specd", "test.toml").model_name ==
        "llama-3.2-1b");
  CHECK(parse_gateway_config("", "/etc/specd", "test.toml").model_name == "target");  // the committed pair's
  CHECK(model_dir_name("models/x") == "x");
  CHECK(model_dir_name("/a/b/") == "b");
}

TEST_CASE("serve --model DIR serves DIR alone under its own name unless --draft or --model-name say otherwise") {
  const GatewayConfig conf = parse_gateway_config(
      "[server]\nmodel_name = \"specd-tiny\"\n[engine]\ntarget = \"/m/target\"\ndraft = \"/m/draft\"\n", "/etc/specd",
      "test.toml");
  GatewayConfig c = conf;
  apply_model_flags(c, {});
  CHECK(c.engine.target_dir == "/m/target");
  CHECK(c.engine.draft_dir == "/m/draft");
  CHECK(c.model_name == "specd-tiny");

  c = conf;
  apply_model_flags(c, {"/models/llama-3.2-3b", "", ""});
  CHECK(c.engine.target_dir == "/models/llama-3.2-3b");
  CHECK(c.engine.draft_dir.empty());
  CHECK(c.model_name == "llama-3.2-3b");

  c = conf;
  apply_model_flags(c, {"/models/llama-3.2-3b", "/models/llama-3.2-1b", ""});
  CHECK(c.engine.target_dir == "/models/llama-3.2-3b");
  CHECK(c.engine.draft_dir == "/models/llama-3.2-1b");
  CHECK(c.model_name == "llama-3.2-3b");

  c = conf;
  apply_model_flags(c, {"/models/llama-3.2-3b", "none", "llama-pair"});
  CHECK(c.engine.draft_dir.empty());
  CHECK(c.model_name == "llama-pair");

  c = conf;  // the configured target with another draft, or none
  apply_model_flags(c, {"", "/models/other-draft", ""});
  CHECK(c.engine.target_dir == "/m/target");
  CHECK(c.engine.draft_dir == "/models/other-draft");
  CHECK(c.model_name == "specd-tiny");
  apply_model_flags(c, {"", "none", ""});
  CHECK(c.engine.draft_dir.empty());
}
