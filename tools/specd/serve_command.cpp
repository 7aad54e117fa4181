// `specd serve`: the engine behind the Beast gateway (net/). The config file holds
// every limit and default (conf/specd.toml); flags override it. Prints the URL once
// listening; SIGINT/SIGTERM drain it and stop (streams finish until the deadline, then
// are cancelled; WebSockets close with 1012; meanwhile /health answers 503 draining and
// new requests are refused with shutting_down; net/gateway.hpp).
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <pthread.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "actors/spawn.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "net/data_dir.hpp"
#include "net/gateway.hpp"
#include "net/gateway_config.hpp"
#include "tools/specd/cli_common.hpp"
#include "tools/specd/pair_options.hpp"

namespace specd::cli {

namespace {

namespace asio = boost::asio;

struct ServeArgs {
  std::string config_file;
  std::string host, token, web_root;
  net::ModelFlags models;
  std::string weights, draft_weights;  // empty: as configured
  std::string chat_template;           // empty: the model's own
  std::vector<std::string> cors_origins;
  std::string tool_call_format;  // empty: as configured
  int64_t max_seq_len = -1;      // -1: as configured
  int port = -1;
  int threads = -1;
  int io_threads = -1;
  double shutdown_deadline = -1;
};

net::GatewayConfig load_config(const ServeArgs& a) {
  std::filesystem::path file = a.config_file;
  if (file.empty()) file = net::data_dir() / "conf" / "specd.toml";
  net::GatewayConfig c = net::load_gateway_config(file);
  if (!a.host.empty()) c.host = a.host;
  if (a.port >= 0) c.port = a.port;
  if (!a.token.empty()) c.auth_token = a.token;
  if (!a.web_root.empty()) c.web_root = a.web_root;
  net::ModelFlags models = a.models;
  if (!a.weights.empty()) models.target_weights = models.draft_weights = weight_format_of(a.weights);
  if (!a.draft_weights.empty()) models.draft_weights = weight_format_of(a.draft_weights);
  net::apply_model_flags(c, models);
  if (!a.chat_template.empty()) c.engine.chat_template = a.chat_template;
  if (!a.cors_origins.empty()) c.cors_origins = a.cors_origins;
  if (!a.tool_call_format.empty()) c.tool_call_format = a.tool_call_format;
  if (a.max_seq_len >= 0) c.engine.sequence.max_seq_len = a.max_seq_len;
  if (a.io_threads >= 0) c.io_threads = a.io_threads;
  if (a.shutdown_deadline >= 0) c.shutdown_deadline_seconds = a.shutdown_deadline;
  if (a.threads >= 0) {  // the flag replaces the config's whole thread choice
    c.engine.threads = a.threads;
    c.engine.target_threads = c.engine.draft_threads = 0;
  }
  net::validate(c);
  return c;
}

void run_serve(const ServeArgs& a) {
  net::GatewayConfig config = load_config(a);
  const int32_t io_threads = net::io_thread_count(config, read_cpu_limits());
  asio::io_context io(io_threads);
  Engine engine(io.get_executor(), config.engine);
  auto gateway = std::make_shared<net::Gateway>(io.get_executor(), engine, config);
  const auto bound = gateway->start();
  const std::string url = "http://" + bound.address().to_string() + ":" + std::to_string(bound.port());
  std::printf("specd serve: listening on %s (WebSocket %s/v1/ws, chat page %s/); threads: %s; io threads: %d\n",
              url.c_str(), ("ws" + url.substr(4)).c_str(), url.c_str(), engine.thread_policy().describe().c_str(),
              io_threads);
  std::printf("specd serve: weights: %s\n", engine.weights_summary().c_str());
  std::printf("specd serve: %s; %s\n", engine.kv_cache_summary().c_str(), engine.grammar_cache_summary().c_str());
  std::printf("specd serve: %s\n", engine.context_summary().c_str());
  std::printf("specd serve: round costs: %s\n", engine.start_costs().describe().c_str());
  if (const ChatTemplate* chat = engine.chat_template())
    std::printf("specd serve: chat template %s; tool calls parsed as %s\n", chat->origin().c_str(),
                net::tool_call_format_name(gateway->tool_call_format()));
  std::fflush(stdout);

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    std::fprintf(stderr, "specd serve: signal %d, draining (deadline %.1f s)\n", signal,
                 config.shutdown_deadline_seconds);
    actors::spawn_logged(
        io.get_executor(),
        [&]() -> asio::awaitable<void> {
          co_await gateway->stop();
          co_await engine.stop(std::chrono::milliseconds(1000));
          io.stop();
        },
        "shutdown");
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < io_threads; ++i) {
    threads.emplace_back([&io] {
      pthread_setname_np(pthread_self(), "specd io");
      io.run();
    });
  }
  io.run();
  for (auto& t : threads) t.join();
  std::fprintf(stderr, "specd serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve the engine over WebSocket and OpenAI-style HTTP");
  cmd->add_option("--config", args->config_file, "TOML config (default: conf/specd.toml of specd's data directory)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--host", args->host, "address to bind (config server.host, default 127.0.0.1)");
  cmd->add_option("--port", args->port, "port to bind; 0 picks a free one (config server.port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--token", args->token, "bearer token every route requires (config server.auth_token)");
  cmd->add_option("--web-root", args->web_root, "directory of static pages served at / (config server.web_root)");
  cmd->add_option("--model", args->models.model,
                  "target model directory, served alone unless --draft names a draft (config engine.target)");
  cmd->add_option("--draft", args->models.draft,
                  "draft model directory, or none to serve the target alone (config engine.draft)");
  cmd->add_option("--model-name", args->models.model_name,
                  "the model name of responses and /v1/models (config server.model_name; "
                  "with --model, default: that directory's name)");
  add_weight_options(*cmd, args->weights, args->draft_weights);
  add_chat_template_option(*cmd, args->chat_template);
  cmd->add_option("--max-seq-len", args->max_seq_len,
                  "positions per sequence, prompt plus generated tokens; 0: the model's max_position_embeddings "
                  "(GGUF context_length), bounded by the KV budget (config engine.max_seq_len)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--cors-origins", args->cors_origins,
                  "origins whose browser pages may call the API, comma-separated: \"*\" or https://host[:port] "
                  "(config server.cors_origins; default none)")
      ->delimiter(',');
  cmd->add_option("--tool-call-format", args->tool_call_format,
                  "the tool-call syntax parsed from chat answers: auto (from the chat template), llama3_json, "
                  "hermes, mistral or json (config server.tool_call_format)")
      ->check(CLI::IsMember({"auto", "llama3_json", "hermes", "mistral", "json"}));
  cmd->add_option("--threads", args->threads, "compute threads across both lanes, 0: automatic (config engine.threads)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--io-threads", args->io_threads,
                  "threads running sessions and actors, 0: one per usable CPU "
                  "(config server.io_threads)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--shutdown-deadline", args->shutdown_deadline, "seconds streams may finish after SIGINT/SIGTERM")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->callback([args] { run_serve(*args); });
}

}  // namespace specd::cli
