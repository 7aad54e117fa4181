// The gateway: the connection limit refuses the connection beyond it with
// 503 too_many_connections (others keep working), and a graceful stop lets short
// streams finish, cancels long ones at the deadline with a final done (cancelled),
// closes WebSockets with 1012 and refuses new connections.
#include "tests/support/doctest_torch.hpp"

#include <boost/beast/websocket/error.hpp>

#include "tests/support/gateway_fixture.hpp"

using namespace specd;
using namespace specd::testing;
namespace websocket = boost::beast::websocket;

TEST_CASE("beyond max_connections a connection is refused with 503 too_many_connections; the others keep working") {
  net::GatewayConfig config = test_gateway_config();
  config.max_connections = 2;
  GatewayFixture fixture(config);
  fixture.run([&]() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    net::WsClient a(executor), b(executor), c(executor);
    REQUIRE_FALSE(co_await a.connect("127.0.0.1", fixture.port()));
    REQUIRE_FALSE(co_await b.connect("127.0.0.1", fixture.port()));
    CHECK(co_await c.connect("127.0.0.1", fixture.port()));
    CHECK(c.handshake_status() == 503);
    CHECK(c.handshake_body().find("\"code\":\"too_many_connections\"") != std::string::npos);
    co_await a.send_text(generate_json("a", "ROMEO:\n", 10));
    auto streams = co_await collect(a, {"a"});
    CHECK(streams["a"].tokens == solo_greedy("ROMEO:\n", 10));
    // A slot frees when a connection closes.
    co_await b.close();
    for (int i = 0; i < 100 && fixture.gateway().open_sessions() > 1; ++i)
      co_await sleep_for(std::chrono::milliseconds(10));
    net::WsClient d(executor);
    CHECK_FALSE(co_await d.connect("127.0.0.1", fixture.port()));
  });
}

TEST_CASE("graceful stop: short streams finish, long ones end with done cancelled, then close code 1012") {
  net::GatewayConfig config = test_gateway_config();
  config.shutdown_deadline_seconds = 0.5;
  config.engine.sequence.max_seq_len = 1024;
  GatewayFixture fixture(config);
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient client(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await client.connect("127.0.0.1", fixture.port()));
    co_await client.send_text(generate_json("short", "ROMEO:\n", 6));
    co_await client.send_text(generate_json("long", "JULIET:\n", 1000, R"(,"ignore_eos":true)"));
    net::WsClient::Frame first = co_await client.read();  // both are running
    REQUIRE_FALSE(first.ec);
    asio::co_spawn(asio::make_strand(fixture.io()), fixture.gateway().stop(),
                   [stopped](std::exception_ptr) { *stopped = true; });
    auto streams = co_await collect(client, {"short", "long"});
    const ServerFrame head = parse_frame(first.text);
    auto& early = streams[head.id].tokens;
    early.insert(early.begin(), head.token_ids.begin(), head.token_ids.end());
    CHECK(streams["short"].tokens == solo_greedy("ROMEO:\n", 6));
    CHECK(streams["long"].finish_reason == "cancelled");
    CHECK(streams["long"].tokens.size() < 1000);
    CHECK(streams["long"].completion_tokens == static_cast<int64_t>(streams["long"].tokens.size()));
    net::WsClient::Frame last = co_await client.read();
    CHECK(last.ec == websocket::error::closed);
    CHECK(client.close_reason().code == websocket::close_code::service_restart);
    for (int i = 0; i < 300 && !*stopped; ++i) co_await sleep_for(std::chrono::milliseconds(10));
    CHECK(*stopped);
    net::WsClient late(co_await asio::this_coro::executor);
    CHECK(co_await late.connect("127.0.0.1", fixture.port()));  // no longer accepting
  });
}
