#include "tools/loadgen/loadgen_options.hpp"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "json/json_serialize.hpp"
#include "tools/loadgen/conversation.hpp"
#include "tools/loadgen/html_report.hpp"

namespace specd::loadgen {

namespace {

std::vector<int32_t> parse_ramp(const std::string& text) {
  std::vector<int32_t> levels;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > 100000) {
      throw CLI::ValidationError("--ramp", "expected comma-separated client counts >= 1, got '" + text + "'");
    }
    levels.push_back(static_cast<int32_t>(value));
  }
  if (levels.empty()) throw CLI::ValidationError("--ramp", "the ramp is empty");
  return levels;
}

void check_k(const std::string& k) {
  if (k == "auto") return;
  char* end = nullptr;
  const long value = std::strtol(k.c_str(), &end, 10);
  if (k.empty() || *end != '\0' || value < 1 || value > 16) {
    throw CLI::ValidationError("--k", "expected 1..16 or auto, got '" + k + "'");
  }
}

}  // namespace

LoadgenOptions parse_options(int argc, char** argv) {
  LoadgenOptions o;
  CLI::App app{"loadgen: concurrent streaming clients against a running `specd serve`; prints JSON"};
  std::string transport = "ws", ramp;
  uint64_t seed = 0;
  bool no_spec = false;
  app.add_option("--host", o.host, "server address")->capture_default_str();
  app.add_option("--port", o.port, "server port")->capture_default_str()->check(CLI::Range(1, 65535));
  app.add_option("--token", o.token, "bearer token (server.auth_token)");
  app.add_option("--transport", transport, "ws (WebSocket /v1/ws) or sse (OpenAI-style HTTP streaming)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ws", "sse"}));
  app.add_option("--clients,-c", o.clients, "concurrent clients")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--ramp", ramp, "client counts to run in turn, e.g. 8,16,32,64,128 (overrides --clients)");
  app.add_flag("--keep-going", o.keep_going, "continue the ramp after a level with errors");
  auto* requests_opt = app.add_option("--requests,-r", o.requests, "requests per client")
                           ->capture_default_str()
                           ->check(CLI::Range(1, 1000000));
  auto* turns_opt = app.add_option("--turns", o.turns,
                                   "a conversation per client: T requests, each resending the conversation so far "
                                   "(earlier messages and answers) plus a new user message (replaces --requests)")
                        ->check(CLI::Range(1, 100000));
  app.add_option("--prompt", o.prompt, "prompt text")->capture_default_str();
  app.add_option("--turn-prompt", o.turn_prompt, "the user message of turns 2.. (default: the prompt again)")
      ->needs(turns_opt);
  app.add_flag("--chat", o.chat, "send the prompt as a user message (the model's chat template)");
  app.add_option("--max-tokens", o.max_tokens, "tokens per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--ignore-eos", o.ignore_eos,
               "keep generating past the end-of-sequence token, so every request produces --max-tokens tokens");
  app.add_option("--temperature", o.temperature, "0 is greedy")->capture_default_str()->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-p", o.top_p)->capture_default_str()->check(CLI::Range(1e-9, 1.0));
  app.add_option("--top-k", o.top_k, "0 keeps every token")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  auto* seed_opt = app.add_option("--seed", seed, "seed of request n is seed + n (default: the server's)");
  app.add_flag("--no-spec", no_spec, "target only, no speculation");
  app.add_option("--k", o.k, "drafted tokens per round, 1..16 or auto")->capture_default_str();
  app.add_option("--timeout", o.timeout_s,
                 "seconds per ramp level before the remaining streams count as timeout errors")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--session", o.session,
                 "key client i's requests PREFIX-i (X-Session-Id header over SSE, ?session= on the WebSocket), "
                 "for a proxy that keeps a session on one replica");
  app.add_flag("--answers", o.answers, "count the answer texts in the report (answers: text -> streams)");
  app.add_option("--report", o.report, "also write a self-contained HTML report (CDFs and charts) to this file")
      ->check(CLI::Validator(report_path_problem, "FILE.html"));
  try {
    app.parse(argc, argv);
    if (turns_opt->count() > 0 && requests_opt->count() > 0) {
      throw CLI::ValidationError("--turns", "replaces --requests (one request per turn); give one of them");
    }
    check_k(o.k);
    if (!ramp.empty()) o.ramp = parse_ramp(ramp);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  o.transport = transport == "sse" ? Transport::sse : Transport::ws;
  o.speculative = !no_spec;
  if (seed_opt->count() > 0) o.seed = seed;
  return o;
}

namespace {

// The request whose input is `input_key` (prompt or messages) = `input`.
std::string request_with(const LoadgenOptions& o, const std::string& id, int64_t request_number,
                         std::string_view input_key, boost::json::value input) {
  boost::json::object r;
  if (o.transport == Transport::ws) {
    r["type"] = "generate";
    r["id"] = id;
  } else {
    r["model"] = "specd";
    r["stream"] = true;
    r["stream_options"] = boost::json::object{{"include_usage", true}};
  }
  r[input_key] = std::move(input);
  r["max_tokens"] = o.max_tokens;
  if (o.ignore_eos) r["ignore_eos"] = true;
  r["temperature"] = o.temperature;
  r["top_p"] = o.top_p;
  r["top_k"] = o.top_k;
  if (o.seed) r["seed"] = *o.seed + static_cast<uint64_t>(request_number);
  boost::json::object spec{{"enabled", o.speculative}};
  if (o.speculative) {
    if (o.k == "auto") {
      spec["k"] = "auto";
    } else {
      spec["k"] = std::stoi(o.k);
    }
  }
  r["speculative"] = std::move(spec);
  return serialize_json(r);
}

}  // namespace

std::string request_json(const LoadgenOptions& o, const std::string& id, int64_t request_number) {
  if (!o.chat) return request_with(o, id, request_number, "prompt", boost::json::string(o.prompt));
  return request_with(o, id, request_number, "messages",
                      boost::json::array{boost::json::object{{"role", "user"}, {"content", o.prompt}}});
}

std::string request_json(const LoadgenOptions& o, const std::string& id, int64_t request_number,
                         const Conversation& conversation) {
  if (!o.chat) return request_with(o, id, request_number, "prompt", boost::json::string(conversation.transcript()));
  return request_with(o, id, request_number, "messages", conversation.messages());
}

std::string sse_target(const LoadgenOptions& o) { return o.chat ? "/v1/chat/completions" : "/v1/completions"; }

std::string session_key(const LoadgenOptions& o, int32_t client_index) {
  return o.session.empty() ? "" : o.session + "-" + std::to_string(client_index);
}

std::string ws_target(const LoadgenOptions& o, int32_t client_index) {
  const std::string key = session_key(o, client_index);
  if (key.empty()) return "/v1/ws";
  std::string target = "/v1/ws?session=";
  static constexpr char hex[] = "0123456789ABCDEF";
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      target += static_cast<char>(c);
    } else {
      target += '%';
      target += hex[c >> 4];
      target += hex[c & 15];
    }
  }
  return target;
}

}  // namespace specd::loadgen
