// The WebSocket session (/v1/ws) with the Beast client over loopback on the default
// pair: 64 simultaneous streams each get exactly their own target-only greedy tokens,
// many requests share a connection, every bad input gets its error code and the
// connection survives where the protocol allows, cancel and disconnect end requests
// (a cancel that crosses its request's done frame is silent), a slow reader is cancelled without slowing anyone else,
// idle peers time out, and sampled speculation served from the prefix cache, or under a
// grammar, keeps the (masked) target's distribution.
#include "tests/support/doctest_torch.hpp"

#include <boost/beast/websocket/error.hpp>

#include "engine/grammar/grammar_cache.hpp"
#include "engine/grammar/token_vocabulary.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/gateway_fixture.hpp"
#include "tests/support/joint_distribution.hpp"

using namespace specd;
using namespace specd::testing;
namespace websocket = boost::beast::websocket;

namespace {

asio::awaitable<std::map<std::string, Stream>> one_stream(uint16_t port, std::string id, std::string prompt,
                                                          int max_tokens, std::string extra) {
  net::WsClient client(co_await asio::this_coro::executor);
  auto ec = co_await client.connect("127.0.0.1", port);
  REQUIRE_FALSE(ec);
  std::string message = generate_json(id, prompt, max_tokens, extra);
  co_await client.send_text(std::move(message));
  auto streams = co_await collect(client, {id});
  co_await client.close();
  co_return streams;
}

// Sends `messages` and returns the frames of the replies, in order, until `replies` arrived.
asio::awaitable<std::vector<ServerFrame>> exchange(net::WsClient& client, std::vector<std::string> messages,
                                                   size_t replies) {
  for (auto& m : messages) {
    auto ec = co_await client.send_text(std::move(m));
    REQUIRE_FALSE(ec);
  }
  std::vector<ServerFrame> out;
  while (out.size() < replies) {
    net::WsClient::Frame frame = co_await client.read();
    if (frame.ec) break;
    out.push_back(parse_frame(frame.text));
  }
  co_return out;
}

// `n` sampled requests of 3 tokens (K = 2, top-k 3, `fields` added) for one prompt over one connection,
// 16 in flight at a time, seeds seed0, seed0 + 1, ...; the continuations and the
// requests whose prompt was partly served from the prefix cache.
struct ServedSample {
  std::map<Continuation, int64_t> counts;
  int64_t cached_requests = 0, errors = 0;
};

asio::awaitable<ServedSample> sample_served(uint16_t port, std::string prompt, int64_t n, int64_t seed0,
                                            boost::json::object fields = {}) {
  net::WsClient client(co_await asio::this_coro::executor);
  REQUIRE_FALSE(co_await client.connect("127.0.0.1", port));
  ServedSample out;
  for (int64_t first = 0; first < n; first += 16) {
    std::vector<std::string> ids;
    for (int64_t i = first; i < std::min(n, first + 16); ++i) {
      ids.push_back("r" + std::to_string(i));
      boost::json::object m{{"type", "generate"}, {"id", ids.back()}, {"prompt", prompt},  {"max_tokens", 3},
                            {"temperature", 1},   {"top_k", 3},       {"seed", seed0 + i}, {"speculative", {{"k", 2}}}};
      for (const auto& [key, value] : fields) m[key] = value;
      REQUIRE_FALSE(co_await client.send_text(serialize_json(m)));
    }
    for (auto& [id, stream] : co_await collect(client, ids)) {
      if (!stream.error_code.empty() || stream.tokens.size() != 3) {
        out.errors += 1;
        continue;
      }
      out.counts[stream.tokens] += 1;
      if (stream.cached_tokens > 0) out.cached_requests += 1;
    }
  }
  co_await client.close();
  co_return out;
}

// sample_served from `clients` connections at once, `per_client` requests each; the
// counts added up.
ServedSample sample_clients(GatewayFixture& fixture, const std::string& prompt, int64_t clients, int64_t per_client,
                            int64_t seed0, const boost::json::object& fields = {}) {
  std::vector<std::future<ServedSample>> futures;
  for (int64_t c = 0; c < clients; ++c) {
    futures.push_back(asio::co_spawn(asio::make_strand(fixture.io()),
                                     sample_served(fixture.port(), prompt, per_client, seed0 + c * per_client, fields),
                                     asio::use_future));
  }
  ServedSample all;
  for (auto& f : futures) {
    const ServedSample s = f.get();
    for (const auto& [seq, count] : s.counts) all.counts[seq] += count;
    all.cached_requests += s.cached_requests;
    all.errors += s.errors;
  }
  return all;
}

}  // namespace

TEST_CASE(
    "sampled speculation served with prefix-cache hits has the target's joint distribution (chi-square, p < 0.001)") {
  // The exact target-only probabilities of the first three tokens against N requests
  // through the server, nearly all of which map the prompt's cached blocks in both the
  // target's and the draft's cache (a wrong target block would shift the distribution; a
  // wrong draft block only the acceptance).
  GatewayFixture fixture(test_gateway_config());
  const std::string prompt =
      "GLOUCESTER:\nNow is the winter of our discontent\nMade glorious summer by this sun of York;\n"
      "And all the clouds that lour'd upon our house\nIn the deep bosom of the ocean buried.\n";
  const std::vector<int32_t> ids = fixture.engine().tokenizer()->encode(prompt, true);
  REQUIRE(ids.size() > 2 * KvCache::kDefaultBlockSize);  // at least two full blocks to map
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*load_model(kGatewayModels / "target"), ids, sp);
  REQUIRE(exact.size() == 27);
  const int64_t clients = 4, n = 2000 * clients;
  const ServedSample served = sample_clients(fixture, prompt, clients, n / clients, 7000);
  REQUIRE(served.errors == 0);
  CHECK(served.cached_requests >= n - clients * 16);  // all but the first requests of each client hit the cache
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, {served.counts, {}}, n, outside);
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical << "), "
                    << served.cached_requests << " of " << n << " requests hit the prefix cache");
  CHECK(outside == 0);
  CHECK(test.dof >= 3);
  CHECK(test.passes());
}

TEST_CASE("sampled speculation served under a GBNF grammar has the masked target's joint distribution (chi-square)") {
  // The draft proposes from its masked distribution and the target judges with its own
  // masked one, at every row of the verify pass: through the server, the first three
  // tokens must follow the target masked by hand (each step's logits under the grammar's
  // mask, then temperature and top-k), with nothing outside the grammar.
  GatewayFixture fixture(test_gateway_config());
  const std::string prompt = "ROMEO:\n";
  const std::string gbnf = R"(root ::= ("Good my lord" | "My gracious liege" | "Sweet friend") "!")";
  const Tokenizer& tokenizer = *fixture.engine().tokenizer();
  const auto grammar = grammar::compile_grammar(
      grammar::GrammarKind::gbnf, gbnf,
      std::make_shared<const grammar::TokenVocabulary>(grammar::vocabulary_from_tokenizer(tokenizer, {})));
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*load_model(kGatewayModels / "target"), tokenizer.encode(prompt, true), sp, grammar);
  REQUIRE(exact.size() >= 4);
  const int64_t clients = 4, n = 2000 * clients;
  const ServedSample served = sample_clients(fixture, prompt, clients, n / clients, 9000, {{"grammar", gbnf}});
  REQUIRE(served.errors == 0);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, {served.counts, {}}, n, outside);
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical << ") over "
                    << exact.size() << " triples the grammar allows");
  CHECK(outside == 0);
  CHECK(test.dof >= 3);
  CHECK(test.passes());
}

TEST_CASE("64 simultaneous WebSocket streams each receive exactly their own greedy tokens") {
  GatewayFixture fixture(test_gateway_config());
  const auto prompts = test_prompts(64);
  const char* variants[] = {"", R"(,"speculative":{"k":2})", R"(,"speculative":{"k":"auto"})",
                            R"(,"speculative":{"enabled":false})", R"(,"speculative":{"drafter":"lookup"})"};
  std::vector<std::future<std::map<std::string, Stream>>> results;
  for (size_t i = 0; i < prompts.size(); ++i) {
    results.push_back(asio::co_spawn(
        asio::make_strand(fixture.io()),
        one_stream(fixture.port(), "s" + std::to_string(i), prompts[i], 24, variants[i % 5]), asio::use_future));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto streams = results[i].get();
    const Stream& s = streams.at("s" + std::to_string(i));
    CAPTURE(i);
    CHECK(s.error_code == "");
    CHECK(s.tokens == solo_greedy(prompts[i], 24));
    CHECK(s.completion_tokens == static_cast<int64_t>(s.tokens.size()));
    CHECK((s.finish_reason == "length" || s.finish_reason == "stop"));
    CHECK(streams.size() == 1);  // nothing of anyone else's
  }
}

TEST_CASE("many requests in flight on one connection are told apart by id") {
  GatewayFixture fixture(test_gateway_config());
  const auto prompts = test_prompts(12);
  auto streams = fixture.run([&]() -> asio::awaitable<std::map<std::string, Stream>> {
    net::WsClient client(co_await asio::this_coro::executor);
    co_await client.connect("127.0.0.1", fixture.port());
    std::vector<std::string> ids;
    for (size_t i = 0; i < prompts.size(); ++i) {
      ids.push_back("m" + std::to_string(i));
      co_await client.send_text(generate_json(ids.back(), prompts[i], 20));
    }
    co_return co_await collect(client, ids);
  });
  REQUIRE(streams.size() == prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(i);
    CHECK(streams.at("m" + std::to_string(i)).tokens == solo_greedy(prompts[i], 20));
  }
}

TEST_CASE("bad input gets an error frame with its code and the connection keeps serving") {
  net::GatewayConfig config = test_gateway_config();
  config.max_frame_bytes = 4096;
  config.max_requests_per_connection = 3;
  GatewayFixture fixture(config);
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient client(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await client.connect("127.0.0.1", fixture.port()));
    struct Case {
      std::string message, code, id;
    };
    const std::vector<Case> cases = {
        {"{not json", "malformed_json", ""},
        {R"({"type":"subscribe","id":"x1"})", "unknown_type", "x1"},
        {R"({"type":"generate","id":"x2"})", "missing_field", "x2"},
        {R"({"type":"generate","id":"x3","prompt":"a","max_tokens":-1})", "bad_value", "x3"},
        {R"({"type":"generate","id":"x4","prompt":"a","max_tokens":100000000})", "bad_value", "x4"},
        {R"({"type":"generate","id":"x5","prompt":"a","top_p":1.5})", "bad_value", "x5"},
        {R"({"type":"generate","id":"x6","prompt":"a","temperature":"warm"})", "bad_value", "x6"},
        {R"({"type":"generate","id":"x7","prompt":"a","speculative":{"k":99}})", "bad_value", "x7"},
        {R"({"type":"cancel","id":"nobody"})", "unknown_id", "nobody"},
        {R"({"type":"generate","id":"x8","prompt":""})", "bad_value", "x8"},
        {std::string(R"({"type":"generate","id":"x9","prompt":")") + std::string(5000, 'a') + "\"}", "frame_too_large",
         ""},
    };
    // (No CAPTURE here: doctest's scoped context is thread-local, and this coroutine
    // may resume on another io thread.)
    for (const Case& c : cases) {
      auto replies = co_await exchange(client, {c.message}, 1);
      REQUIRE(replies.size() == 1);
      CHECK_MESSAGE(replies[0].type == "error", c.message.substr(0, 80));
      CHECK_MESSAGE(replies[0].code == c.code, c.message.substr(0, 80));
      CHECK_MESSAGE(replies[0].id == c.id, c.message.substr(0, 80));
    }
    co_await client.send_binary("\x01\x02");
    auto binary = co_await exchange(client, {}, 1);
    REQUIRE(binary.size() == 1);
    CHECK(binary[0].code == "binary_frame");
    // Duplicate ids and the per-connection limit: three long requests in flight.
    auto limited = co_await exchange(
        client,
        {generate_json("d", "ROMEO:", 200), generate_json("d", "ROMEO:", 200), generate_json("e", "ROMEO:", 200),
         generate_json("f", "ROMEO:", 200), generate_json("g", "ROMEO:", 200)},
        2);
    std::map<std::string, std::string> errors;
    for (const auto& f : limited) errors[f.id] = f.code;
    CHECK(errors == std::map<std::string, std::string>{{"d", "duplicate_id"}, {"g", "too_many_requests"}});
    for (std::string id : {"d", "e", "f"}) co_await client.send_text(R"({"type":"cancel","id":")" + id + "\"}");
    auto ended = co_await collect(client, {"d", "e", "f"});
    for (std::string id : {"d", "e", "f"}) CHECK(ended[id].finish_reason == "cancelled");
    // Still serving: a good request after all that.
    co_await client.send_text(generate_json("ok", "JULIET:\n", 12));
    auto good = co_await collect(client, {"ok"});
    CHECK(good["ok"].tokens == solo_greedy("JULIET:\n", 12));
  });
}

TEST_CASE("a cancel after its request finished is silent; unknown and forgotten ids get unknown_id") {
  net::GatewayConfig config = test_gateway_config();
  config.finished_ids_per_connection = 2;
  GatewayFixture fixture(config);
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient client(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await client.connect("127.0.0.1", fixture.port()));
    auto cancel = [](std::string id) { return R"({"type":"cancel","id":")" + id + "\"}"; };
    // A cancel right after the done frame: no frame answers it. The next request's frames
    // come after anything the cancel would have caused, so an error for "a" would show here.
    co_await client.send_text(generate_json("a", "ROMEO:", 4));
    auto a = co_await collect(client, {"a"});
    REQUIRE(a["a"].ended());
    co_await client.send_text(cancel("a"));
    co_await client.send_text(generate_json("b", "JULIET:\n", 6));
    auto b = co_await collect(client, {"b"});
    CHECK(b.size() == 1);
    CHECK(b["b"].error_code == "");
    CHECK(b["b"].tokens == solo_greedy("JULIET:\n", 6));
    // The race itself: a cancel sent right behind a one-token request ends it either way
    // (done, cancelled or not), never with an error.
    co_await client.send_text(generate_json("r", "HAMLET:\n", 1));
    co_await client.send_text(cancel("r"));
    co_await client.send_text(generate_json("c", "ROMEO:", 3));
    auto raced = co_await collect(client, {"r", "c"});
    CHECK(raced.size() == 2);
    CHECK(raced["r"].error_code == "");
    CHECK(raced["r"].ended());
    CHECK(raced["c"].tokens == solo_greedy("ROMEO:", 3));
    // A cancel of an id this connection never used.
    auto never = co_await exchange(client, {cancel("never")}, 1);
    REQUIRE(never.size() == 1);
    CHECK(never[0].type == "error");
    CHECK(never[0].code == "unknown_id");
    CHECK(never[0].id == "never");
    // "b" fell out of a memory of two ("r" and "c" finished after it).
    auto forgotten = co_await exchange(client, {cancel("b")}, 1);
    REQUIRE(forgotten.size() == 1);
    CHECK(forgotten[0].code == "unknown_id");
    CHECK(forgotten[0].id == "b");
    // A cancel of a request still running cancels it; a second cancel is then silent.
    co_await client.send_text(generate_json("long", "ROMEO:\n", 200, R"(,"ignore_eos":true)"));
    net::WsClient::Frame first = co_await client.read();
    CHECK(parse_frame(first.text).id == "long");
    co_await client.send_text(cancel("long"));
    auto ended = co_await collect(client, {"long"});
    CHECK(ended["long"].finish_reason == "cancelled");
    co_await client.send_text(cancel("long"));
    co_await client.send_text(generate_json("d", "JULIET:\n", 2));
    auto d = co_await collect(client, {"d"});
    CHECK(d.size() == 1);
    CHECK(d["d"].tokens == solo_greedy("JULIET:\n", 2));
  });
}

TEST_CASE("invalid UTF-8 in a text frame fails the connection with 1007; others never notice") {
  GatewayFixture fixture(test_gateway_config());
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient bystander(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await bystander.connect("127.0.0.1", fixture.port()));
    co_await bystander.send_text(generate_json("b", "HAMLET:\n", 40));
    net::WsClient bad(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await bad.connect("127.0.0.1", fixture.port()));
    co_await bad.send_text("{\"type\":\"generate\",\"id\":\"u\",\"prompt\":\"\xc3\x28\"}");
    net::WsClient::Frame frame = co_await bad.read();
    CHECK(frame.ec == websocket::error::closed);
    CHECK(bad.close_reason().code == websocket::close_code::bad_payload);
    auto streams = co_await collect(bystander, {"b"});
    CHECK(streams["b"].tokens == solo_greedy("HAMLET:\n", 40));
  });
}

TEST_CASE("a disconnect cancels the connection's requests and frees the engine") {
  GatewayFixture fixture(test_gateway_config());
  fixture.run([&]() -> asio::awaitable<void> {
    {
      net::WsClient client(co_await asio::this_coro::executor);
      REQUIRE_FALSE(co_await client.connect("127.0.0.1", fixture.port()));
      co_await client.send_text(generate_json("long1", "ROMEO:\n", 220, R"(,"ignore_eos":true)"));
      co_await client.send_text(generate_json("long2", "JULIET:\n", 220, R"(,"ignore_eos":true)"));
      net::WsClient::Frame first = co_await client.read();
      CHECK(parse_frame(first.text).type == "tokens");
      boost::system::error_code ignored;
      boost::beast::get_lowest_layer(client.stream()).socket().close(ignored);
    }
    for (int i = 0; i < 200 && fixture.engine().live_requests() > 0; ++i)
      co_await sleep_for(std::chrono::milliseconds(10));
    CHECK(fixture.engine().live_requests() == 0);
    EngineSnapshot s = co_await fixture.engine().snapshot();
    CHECK(s.requests_cancelled == 2);
    CHECK(s.target_slots_in_use == 0);
  });
}

TEST_CASE("a client too slow to read is cancelled with slow_consumer; another client's stream is untouched") {
  net::GatewayConfig config = test_gateway_config();
  config.outbound_queue_frames = 2;
  config.send_buffer_bytes = 4096;
  config.engine.sequence.max_seq_len = 1024;
  GatewayFixture fixture(config);
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient slow(co_await asio::this_coro::executor);
    net::WsClient::Options small;
    small.receive_buffer_bytes = 4096;
    REQUIRE_FALSE(co_await slow.connect("127.0.0.1", fixture.port(), small));
    co_await slow.send_text(generate_json("slow", "ROMEO:\n", 1000, R"(,"ignore_eos":true)"));
    net::WsClient fast(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await fast.connect("127.0.0.1", fixture.port()));
    co_await fast.send_text(generate_json("fast", "MENENIUS:\n", 60));
    auto fast_streams = co_await collect(fast, {"fast"});
    CHECK(fast_streams["fast"].tokens == solo_greedy("MENENIUS:\n", 60));
    // The slow client still reads nothing until the gateway gave up on it.
    for (int i = 0; i < 3000 && fixture.gateway().metrics().errors(ErrorCode::slow_consumer) == 0; ++i) {
      co_await sleep_for(std::chrono::milliseconds(10));
    }
    auto slow_streams = co_await collect(slow, {"slow"});
    CHECK(slow_streams["slow"].error_code == "slow_consumer");
    CHECK(slow_streams["slow"].finish_reason == "");
    CHECK(slow_streams["slow"].tokens.size() < 1000);
    CHECK(fixture.gateway().metrics().errors(ErrorCode::slow_consumer) == 1);
  });
}

TEST_CASE("keepalive pings hold a reading client; a peer that stops reading is closed after the idle timeout") {
  net::GatewayConfig config = test_gateway_config();
  config.ws_idle_seconds = 0.6;
  GatewayFixture fixture(config);
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient silent(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await silent.connect("127.0.0.1", fixture.port()));
    net::WsClient alive(co_await asio::this_coro::executor);
    REQUIRE_FALSE(co_await alive.connect("127.0.0.1", fixture.port()));
    // The live client keeps a read pending (which answers pings) through three idle periods.
    auto first = std::make_shared<std::optional<net::WsClient::Frame>>();
    asio::co_spawn(co_await asio::this_coro::executor, alive.read(),
                   [first](std::exception_ptr, net::WsClient::Frame f) { *first = std::move(f); });
    co_await sleep_for(std::chrono::milliseconds(1800));
    CHECK_FALSE(first->has_value());  // nothing arrived, and the connection is still up
    co_await alive.send_text(generate_json("k", "LUCIO:\n", 4));
    for (int i = 0; i < 500 && !first->has_value(); ++i) co_await sleep_for(std::chrono::milliseconds(10));
    REQUIRE(first->has_value());
    CHECK_FALSE((*first)->ec);
    CHECK(parse_frame((*first)->text).id == "k");
    // The silent client never read, never answered a ping: the server is gone.
    net::WsClient::Frame late = co_await silent.read();
    CHECK(late.ec);
    CHECK(fixture.gateway().open_sessions() == 1);
  });
}

TEST_CASE("WebSocket: unseeded samples at temperature 1 differ; the same seed gives the same tokens twice") {
  GatewayFixture fixture(test_gateway_config());
  auto sample = [&](const std::string& id, std::optional<int64_t> seed) {
    boost::json::object m{{"type", "generate"}, {"id", id},         {"prompt", "ROMEO:"},
                          {"max_tokens", 24},   {"temperature", 1}, {"ignore_eos", true}};
    if (seed) m["seed"] = *seed;
    return fixture.run([&, message = serialize_json(m)]() -> asio::awaitable<std::vector<int32_t>> {
      net::WsClient client(co_await asio::this_coro::executor);
      REQUIRE_FALSE(co_await client.connect("127.0.0.1", fixture.port()));
      REQUIRE_FALSE(co_await client.send_text(message));
      auto streams = co_await collect(client, {id});
      co_await client.close();
      co_return streams[id].tokens;
    });
  };
  const std::vector<int32_t> a = sample("u1", std::nullopt), b = sample("u2", std::nullopt),
                             c = sample("u3", std::nullopt);
  REQUIRE(a.size() == 24);
  CHECK((a != b && b != c && a != c));
  CHECK(sample("s1", 11) == sample("s2", 11));
}
