#pragma once
// The gateway: accepts TCP connections on one port and hands each to an HTTP session
// (which upgrades /v1/ws to a WebSocket session). Owns what sessions share: the
// engine reference, the config, the metrics, and the registry of
// live sessions that stop() drains. Thread-safe; sessions run on their own strands.
//
//   auto gateway = std::make_shared<net::Gateway>(io.get_executor(), engine, config);
//   tcp::endpoint bound = gateway->start();   // throws on bind failure
//   ...
//   co_await gateway->stop();   // on SIGINT/SIGTERM, before engine.stop()
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "actors/engine.hpp"
#include "net/gateway_config.hpp"
#include "net/metrics.hpp"
#include "net/request_timing.hpp"
#include "net/tool_calls.hpp"

namespace specd::net {

class Gateway : public std::enable_shared_from_this<Gateway> {
 public:
  using Clock = std::chrono::steady_clock;
  // Called on a session's own strand when the server stops: finish by `deadline`.
  using ShutdownHook = std::function<void(Clock::time_point deadline)>;

  Gateway(boost::asio::any_io_executor executor, Engine& engine, GatewayConfig config, GatewayHooks hooks = {});

  // Binds config.host:config.port and starts accepting. Returns the bound endpoint
  // (port 0 picks a free one). Throws boost::system::system_error.
  boost::asio::ip::tcp::endpoint start();
  // Drains, then stops accepting: sessions finish their streams until the configured
  // deadline (then they cancel the rest and close with 1012) while new connections are
  // still accepted and answered 503 (/health: draining; requests: shutting_down), so
  // a load balancer moves new work elsewhere; once every session has ended (or 5 s past
  // the deadline) the listening socket closes.
  boost::asio::awaitable<void> stop();

  Engine& engine() { return engine_; }
  const GatewayConfig& config() const { return config_; }
  Metrics& metrics() { return metrics_; }
  const GatewayHooks& hooks() const { return hooks_; }
  // The tool-call syntax chat answers are parsed with: the configured one, or the
  // chat template's (json without a template).
  ToolCallFormat tool_call_format() const { return tool_call_format_; }
  bool stopping() const { return stopping_.load(); }
  size_t open_sessions() const;

  // Sessions register for the shutdown notice; the returned id unregisters.
  uint64_t register_session(boost::asio::any_io_executor strand, ShutdownHook hook);
  void unregister_session(uint64_t id);

 private:
  boost::asio::awaitable<void> accept_loop();
  void start_connection(boost::asio::ip::tcp::socket socket);

  boost::asio::any_io_executor executor_;
  Engine& engine_;
  GatewayConfig config_;
  GatewayHooks hooks_;
  ToolCallFormat tool_call_format_;
  Metrics metrics_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> connections_{0};

  struct Registered {
    boost::asio::any_io_executor strand;
    ShutdownHook hook;
  };
  mutable std::mutex mutex_;
  std::map<uint64_t, Registered> sessions_;
  uint64_t next_session_ = 1;
  std::optional<Clock::time_point> deadline_;  // set by stop(): late registrants get it at once
};

}  // namespace specd::net
