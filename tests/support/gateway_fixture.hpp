#pragma once
// Helpers for gateway tests: the engine on the committed default pair and a Gateway
// on a free loopback port, run on background io threads; a config for tests; frame
// parsing; and the target-only greedy tokens every stream must reproduce.
#include <simdjson.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/object.hpp>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "json/json_serialize.hpp"
#include "net/gateway.hpp"
#include "net/gateway_config.hpp"
#include "net/ws_client.hpp"
#include "tests/support/engine_runner.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/serving_reference.hpp"

namespace specd::testing {

namespace asio = boost::asio;

inline const std::filesystem::path kGatewayModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";

// Port 0, greedy by default, small limits the tests reach quickly.
inline net::GatewayConfig test_gateway_config() {
  net::GatewayConfig c = net::default_gateway_config();
  c.port = 0;
  c.protocol.default_temperature = 0.0;
  c.engine.sequence.max_seq_len = 256;
  c.engine.max_batch = 32;
  c.shutdown_deadline_seconds = 2;
  return c;
}

class GatewayFixture {
 public:
  // One io thread unless SPECD_TEST_IO_THREADS asks for more (tests/support/engine_runner.hpp).
  explicit GatewayFixture(net::GatewayConfig config, net::GatewayHooks hooks = {}, int threads = 1)
      : work_(asio::make_work_guard(io_)) {
    for (int i = 0, n = test_io_threads(threads); i < n; ++i) threads_.emplace_back([this] { io_.run(); });
    engine_ = std::make_unique<Engine>(io_.get_executor(), config.engine);
    gateway_ = std::make_shared<net::Gateway>(io_.get_executor(), *engine_, config, std::move(hooks));
    port_ = gateway_->start().port();
  }
  // Stops the gateway and the engine, lets the io threads run out of work, then frees
  // the gateway and the engine while the io_context (their strands' owner) still exists.
  ~GatewayFixture() {
    stop();
    work_.reset();
    for (auto& t : threads_) t.join();
    gateway_.reset();
    engine_.reset();
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    asio::co_spawn(
        asio::make_strand(io_),
        [this]() -> asio::awaitable<void> {
          co_await gateway_->stop();
          co_await engine_->stop(std::chrono::seconds(2));
        },
        asio::use_future)
        .get();
  }

  // Runs a client coroutine on its own strand (a Beast stream's operations must not
  // run on two io threads at once) and blocks until it finishes.
  template <class Awaitable>
  auto run(Awaitable a) {
    return asio::co_spawn(asio::make_strand(io_), std::move(a), asio::use_future).get();
  }

  asio::io_context& io() { return io_; }
  Engine& engine() { return *engine_; }
  net::Gateway& gateway() { return *gateway_; }
  uint16_t port() const { return port_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<net::Gateway> gateway_;
  uint16_t port_ = 0;
  bool stopped_ = false;
};

// One parsed server frame.
struct ServerFrame {
  std::string type, id, text, code, finish_reason;
  std::vector<int32_t> token_ids;
  int64_t completion_tokens = -1, cached_tokens = -1;
};

// A parser per call, not a thread_local one: this is inlined into client coroutines that
// resume on any io thread, and clang 16 may keep a thread_local's address across a
// suspension (llvm-project #47179, #63022; see CMakeLists.txt), so two threads could
// share one parser.
inline ServerFrame parse_frame(const std::string& json) {
  simdjson::dom::parser parser;
  ServerFrame f;
  simdjson::dom::element root = parser.parse(json);
  f.type = std::string(std::string_view(root["type"]));
  if (root["id"].is_string()) f.id = std::string(std::string_view(root["id"]));
  if (f.type == "tokens") {
    f.text = std::string(std::string_view(root["text"]));
    for (auto id : root["token_ids"].get_array()) f.token_ids.push_back(static_cast<int32_t>(int64_t(id)));
  } else if (f.type == "done") {
    f.finish_reason = std::string(std::string_view(root["finish_reason"]));
    f.completion_tokens = int64_t(root["usage"]["completion_tokens"]);
    f.cached_tokens = int64_t(root["usage"]["prompt_tokens_details"]["cached_tokens"]);
  } else if (f.type == "error") {
    f.code = std::string(std::string_view(root["code"]));
  }
  return f;
}

// What one request received over a connection.
struct Stream {
  std::vector<int32_t> tokens;
  std::string text;
  int frames = 0;
  std::string finish_reason, error_code;
  int64_t completion_tokens = -1, cached_tokens = -1;
  bool ended() const { return !finish_reason.empty() || !error_code.empty(); }
};

// Reads frames until every id in `ids` ended (done or error), or the connection ends.
inline asio::awaitable<std::map<std::string, Stream>> collect(net::WsClient& client, std::vector<std::string> ids) {
  std::map<std::string, Stream> out;
  for (const auto& id : ids) out[id];
  size_t ended = 0;
  while (ended < ids.size()) {
    net::WsClient::Frame frame = co_await client.read();
    if (frame.ec) break;
    ServerFrame f = parse_frame(frame.text);
    Stream& s = out[f.id];
    ++s.frames;
    if (f.type == "tokens") {
      s.tokens.insert(s.tokens.end(), f.token_ids.begin(), f.token_ids.end());
      s.text += f.text;
    } else if (f.type == "done") {
      s.finish_reason = f.finish_reason;
      s.completion_tokens = f.completion_tokens;
      s.cached_tokens = f.cached_tokens;
      ++ended;
    } else if (f.type == "error") {
      s.error_code = f.code;
      ++ended;
    }
  }
  co_return out;
}

inline asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// {"type":"generate",...} for a greedy prompt; `extra` is spliced in (",\"k\":..." style).
inline std::string generate_json(const std::string& id, const std::string& prompt, int max_tokens,
                                 const std::string& extra = "") {
  std::string text = serialize_json(boost::json::object{
      {"type", "generate"}, {"id", id}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}});
  text.insert(text.size() - 1, extra);  // before the closing brace
  return text;
}

}  // namespace specd::testing
