// specd embedded in an application's own Asio event loop: one io_context runs the
// engine's actors next to the application's heartbeat timer and a TCP echo service on
// loopback, on a single thread. While the engine streams a generation, the timer keeps
// ticking and the echo client keeps getting answers: model calls run on the engine's
// compute lanes, never on the application's thread.
//
//   specd_embed_example [--prompt TEXT] [--max-tokens N]
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/object.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "actors/engine.hpp"
#include "json/json_serialize.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

struct Activity {
  int heartbeats = 0;
  int echoes = 0;
  bool generating = true;
};

asio::awaitable<void> heartbeat(Activity& activity) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (activity.generating) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(asio::use_awaitable);
    ++activity.heartbeats;
  }
}

asio::awaitable<void> echo_server(tcp::acceptor& acceptor) {
  tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
  char data[256];
  for (;;) {
    std::tuple<boost::system::error_code, size_t> read =
        co_await socket.async_read_some(asio::buffer(data), asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(read)) co_return;
    co_await asio::async_write(socket, asio::buffer(data, std::get<1>(read)), asio::use_awaitable);
  }
}

asio::awaitable<void> echo_client(tcp::endpoint endpoint, Activity& activity) {
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(endpoint, asio::use_awaitable);
  asio::steady_timer pause(co_await asio::this_coro::executor);
  char reply[5];
  while (activity.generating) {
    co_await asio::async_write(socket, asio::buffer("ping", 4), asio::use_awaitable);
    co_await asio::async_read(socket, asio::buffer(reply, 4), asio::use_awaitable);
    if (std::memcmp(reply, "ping", 4) == 0) ++activity.echoes;
    pause.expires_after(std::chrono::milliseconds(10));
    co_await pause.async_wait(asio::use_awaitable);
  }
  socket.close();
}

asio::awaitable<void> generate(specd::Engine& engine, specd::GenerateRequest request, Activity& activity) {
  int bursts = 0;
  specd::GenerateResult result = co_await engine.generate(request, [&](const specd::Burst& burst) {
    ++bursts;
    std::fwrite(burst.text.data(), 1, burst.text.size(), stderr);
  });
  activity.generating = false;
  std::fprintf(stderr, "\n");
  co_await engine.stop(std::chrono::seconds(5));
  std::puts(
      specd::serialize_json(boost::json::object{{"finish_reason", specd::finish_reason_name(result.finish_reason)},
                                                {"tokens", result.token_ids.size()},
                                                {"bursts", bursts},
                                                {"drafted", result.spec.drafted},
                                                {"accepted", result.spec.accepted}})
          .c_str());
}

}  // namespace

int main(int argc, char** argv) {
  specd::GenerateRequest request;
  request.prompt = "ROMEO:\n";
  request.max_tokens = 96;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--prompt") == 0) request.prompt = argv[i + 1];
    if (std::strcmp(argv[i], "--max-tokens") == 0) request.max_tokens = std::atoi(argv[i + 1]);
  }
  try {
    asio::io_context io;  // one thread: the application's and the engine's
    specd::EngineConfig config;
    config.target_dir = std::string(SPECD_SOURCE_DIR) + "/models/target";
    config.draft_dir = std::string(SPECD_SOURCE_DIR) + "/models/draft";
    config.max_batch = 4;
    specd::Engine engine(io.get_executor(), config);
    tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
    Activity activity;
    asio::co_spawn(io, echo_server(acceptor), asio::detached);
    asio::co_spawn(io, echo_client(acceptor.local_endpoint(), activity), asio::detached);
    asio::co_spawn(io, heartbeat(activity), asio::detached);
    asio::co_spawn(io, generate(engine, request, activity), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
    io.run();
    std::puts(
        specd::serialize_json(boost::json::object{{"heartbeats", activity.heartbeats}, {"echoes", activity.echoes}})
            .c_str());
    return activity.heartbeats > 0 && activity.echoes > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_embed_example: %s\n", e.what());
    return 2;
  }
}
