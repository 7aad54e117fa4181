#include "net/gateway.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>

#include "actors/asio_aliases.hpp"
#include "actors/spawn.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "net/http_session.hpp"

namespace specd::net {

namespace asio = boost::asio;
using actors::use_tuple;
using asio::ip::tcp;

Gateway::Gateway(asio::any_io_executor executor, Engine& engine, GatewayConfig config, GatewayHooks hooks)
    : executor_(executor),
      engine_(engine),
      config_(std::move(config)),
      hooks_(std::move(hooks)),
      tool_call_format_(config_.tool_call_format != "auto" ? *parse_tool_call_format(config_.tool_call_format)
                        : engine.chat_template()           ? detect_tool_call_format(engine.chat_template()->source())
                                                           : ToolCallFormat::json),
      acceptor_(asio::make_strand(executor)) {
  if (!engine_.chat_template())
    std::fprintf(stderr, "specd serve: the model has no chat template: requests with messages are refused\n");
}

tcp::endpoint Gateway::start() {
  const tcp::endpoint endpoint(asio::ip::make_address(config_.host), static_cast<uint16_t>(config_.port));
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  const tcp::endpoint bound = acceptor_.local_endpoint();
  actors::spawn_logged(
      acceptor_.get_executor(), [self = shared_from_this()] { return self->accept_loop(); }, "gateway accept loop");
  return bound;
}

asio::awaitable<void> Gateway::accept_loop() {
  asio::steady_timer backoff(acceptor_.get_executor());
  // Accepts while draining too (stop()): /health then answers 503 and requests are
  // refused with shutting_down, which a proxy retries on another replica.
  for (;;) {
    tcp::socket socket(asio::make_strand(executor_));
    auto [ec] = co_await acceptor_.async_accept(socket, use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // Out of file descriptors and the like: log, wait a little, keep serving.
      std::fprintf(stderr, "specd serve: accept failed: %s\n", ec.message().c_str());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    start_connection(std::move(socket));
  }
}

void Gateway::start_connection(tcp::socket socket) {
  if (config_.send_buffer_bytes > 0) {
    boost::system::error_code ignored;
    socket.set_option(asio::socket_base::send_buffer_size(config_.send_buffer_bytes), ignored);
  }
  socket.set_option(tcp::no_delay(true));
  auto executor = socket.get_executor();
  const bool refused = connections_.fetch_add(1) >= config_.max_connections;
  if (refused) metrics_.connection_refused();
  auto session = std::make_shared<HttpSession>(shared_from_this(), std::move(socket), refused);
  // Released with the coroutine, however it ends.
  std::shared_ptr<void> slot(nullptr, [self = shared_from_this()](void*) { self->connections_.fetch_sub(1); });
  actors::spawn_logged(
      executor, [session, slot]() { return session->run(); }, "http session");
}

size_t Gateway::open_sessions() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

uint64_t Gateway::register_session(asio::any_io_executor strand, ShutdownHook hook) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_session_++;
  if (deadline_) asio::post(strand, [hook, deadline = *deadline_] { hook(deadline); });
  sessions_.emplace(id, Registered{strand, std::move(hook)});
  return id;
}

void Gateway::unregister_session(uint64_t id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

asio::awaitable<void> Gateway::stop() {
  if (stopping_.exchange(true)) co_return;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(config_.shutdown_deadline_seconds));
  {
    std::lock_guard lock(mutex_);
    deadline_ = deadline;
    for (auto& [id, s] : sessions_) asio::post(s.strand, [hook = s.hook, deadline] { hook(deadline); });
  }
  // Sessions end once their last done frame is written and the close handshake ran;
  // a peer that never answers is cut off by its stream's timeout.
  asio::steady_timer poll(co_await asio::this_coro::executor);
  const auto give_up = deadline + std::chrono::seconds(5);
  while (open_sessions() > 0 && Clock::now() < give_up) {
    poll.expires_after(std::chrono::milliseconds(10));
    co_await poll.async_wait(use_tuple);
  }
  // Drained: stop accepting (on the acceptor's strand, before stop() returns).
  co_await asio::co_spawn(
      acceptor_.get_executor(),
      [self = shared_from_this()]() -> asio::awaitable<void> {
        boost::system::error_code ignored;
        self->acceptor_.close(ignored);
        co_return;
      },
      asio::use_awaitable);
}

}  // namespace specd::net
