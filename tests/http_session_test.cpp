// The HTTP side of the gateway over loopback with a Beast client: OpenAI completions
// and chat completions (stream true: SSE chunks ending with [DONE]; stream false: one
// body) give exactly the target-only greedy text, /v1/models, /health, /metrics in the
// Prometheus format, static files with content types, the bearer token on every
// route, and refusals with their status and code.
#include "tests/support/doctest_torch.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "engine/tokenizer/chat_template.hpp"
#include "tests/support/gateway_fixture.hpp"

using namespace specd;
using namespace specd::testing;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

struct Reply {
  int status = 0;
  std::string content_type, body;
};

// One blocking HTTP/1.1 request on its own connection.
Reply request(uint16_t port, http::verb method, const std::string& target, const std::string& body = "",
              const std::string& token = "") {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  beast::error_code ec;
  http::read(stream, buffer, parser, ec);
  REQUIRE_FALSE(ec);
  auto& res = parser.get();
  return {static_cast<int>(res.result_int()), std::string(res[http::field::content_type]), res.body()};
}

// A request with extra headers; the whole response, headers included.
http::response<http::string_body> exchange(uint16_t port, http::verb method, const std::string& target,
                                           const std::string& body,
                                           const std::vector<std::pair<http::field, std::string>>& headers) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser);
  return parser.release();
}

std::string field(const std::string& json, const char* path_a, const char* path_b = nullptr) {
  simdjson::dom::parser parser;
  simdjson::dom::element e = parser.parse(json)[path_a];
  if (path_b) e = e[path_b];
  return std::string(std::string_view(e));
}

// The `data:` payloads of an SSE body.
std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

std::string greedy_text(const std::string& prompt, int max_tokens) {
  static auto tokenizer = load_tokenizer(kGatewayModels / "target");
  return tokenizer->decode(solo_greedy(prompt, max_tokens));
}

GatewayFixture& shared_fixture() {
  static GatewayFixture fixture([] {
    net::GatewayConfig c = test_gateway_config();
    c.max_body_bytes = 2048;
    c.model_name = "specd-test";
    c.cors_origins = {"https://app.example"};
    c.web_root = std::filesystem::temp_directory_path() / "specd_http_session_test_web";
    std::filesystem::create_directories(c.web_root / "js");
    std::ofstream(c.web_root / "index.html") << "<!doctype html><title>specd</title>";
    std::ofstream(c.web_root / "js" / "app.js") << "console.log(1);";
    return c;
  }());
  return fixture;
}

}  // namespace

TEST_CASE("POST /v1/completions stream:false returns the greedy text in OpenAI's body") {
  auto& f = shared_fixture();
  Reply r = request(f.port(), http::verb::post, "/v1/completions",
                    R"({"model":"x","prompt":"ROMEO:\n","max_tokens":16,"temperature":0})");
  CHECK(r.status == 200);
  CHECK(r.content_type == "application/json");
  CHECK(field(r.body, "object") == "text_completion");
  CHECK(field(r.body, "model") == "specd-test");
  simdjson::dom::parser parser;
  auto doc = parser.parse(r.body);
  CHECK(std::string_view(doc["choices"].at(0)["text"]) == greedy_text("ROMEO:\n", 16));
  CHECK(int64_t(doc["usage"]["completion_tokens"]) == static_cast<int64_t>(solo_greedy("ROMEO:\n", 16).size()));
  CHECK(std::string_view(doc["id"]).substr(0, 5) == "cmpl-");
}

TEST_CASE("POST /v1/completions stream:true sends SSE chunks whose text is the greedy text, then [DONE]") {
  auto& f = shared_fixture();
  Reply r = request(
      f.port(), http::verb::post, "/v1/completions",
      R"({"prompt":"JULIET:\n","max_tokens":20,"temperature":0,"stream":true,"stream_options":{"include_usage":true}})");
  CHECK(r.status == 200);
  CHECK(r.content_type == "text/event-stream");
  auto events = sse_events(r.body);
  REQUIRE(events.size() >= 4);
  CHECK(events.back() == "[DONE]");
  std::string text;
  simdjson::dom::parser parser;
  for (size_t i = 0; i + 3 < events.size(); ++i) {
    auto doc = parser.parse(events[i]);
    CHECK(std::string_view(doc["object"]) == "text_completion");
    text += std::string(std::string_view(doc["choices"].at(0)["text"]));
  }
  CHECK(text == greedy_text("JULIET:\n", 20));
  auto finish = parser.parse(events[events.size() - 3]);
  const std::string reason(std::string_view(finish["choices"].at(0)["finish_reason"]));
  CHECK((reason == "length" || reason == "stop"));
  auto usage = parser.parse(events[events.size() - 2]);
  CHECK(int64_t(usage["usage"]["completion_tokens"]) == static_cast<int64_t>(solo_greedy("JULIET:\n", 20).size()));
}

TEST_CASE("an SSE client too slow to read ends with slow_consumer and [DONE], counted as a WebSocket one is") {
  net::GatewayConfig config = test_gateway_config();
  config.outbound_queue_frames = 2;
  config.send_buffer_bytes = 4096;
  config.engine.sequence.max_seq_len = 1024;
  GatewayFixture f(config);
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.socket().open(asio::ip::tcp::v4());
  stream.socket().set_option(asio::socket_base::receive_buffer_size(4096));
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.port()));
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = R"({"prompt":"ROMEO:\n","max_tokens":1000,"ignore_eos":true,"temperature":0,"stream":true})";
  req.prepare_payload();
  http::write(stream, req);
  // Read nothing until the gateway gave up on this client.
  for (int i = 0; i < 3000 && f.gateway().metrics().errors(ErrorCode::slow_consumer) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(f.gateway().metrics().errors(ErrorCode::slow_consumer) == 1);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser);
  CHECK(parser.get().result_int() == 200);
  const auto events = sse_events(parser.get().body());
  REQUIRE(events.size() >= 2);
  CHECK(events.size() - 2 < 1000);  // text chunks before the error: the request was cut short
  CHECK(field(events[events.size() - 2], "error", "code") == "slow_consumer");
  CHECK(events.back() == "[DONE]");
}

TEST_CASE("POST /v1/chat/completions renders the chat template; streamed deltas add up to the whole answer") {
  auto& f = shared_fixture();
  const std::string body =
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Who goes there?"}],)"
      R"("max_tokens":12,"temperature":0)";
  Reply whole = request(f.port(), http::verb::post, "/v1/chat/completions", body + "}");
  CHECK(whole.status == 200);
  simdjson::dom::parser parser;
  auto doc = parser.parse(whole.body);
  CHECK(std::string_view(doc["object"]) == "chat.completion");
  CHECK(std::string_view(doc["choices"].at(0)["message"]["role"]) == "assistant");
  const std::string answer(std::string_view(doc["choices"].at(0)["message"]["content"]));
  CHECK(int64_t(doc["usage"]["prompt_tokens"]) == 32);  // as `specd generate --chat` counts it
  Reply streamed = request(f.port(), http::verb::post, "/v1/chat/completions", body + R"(,"stream":true})");
  auto events = sse_events(streamed.body);
  REQUIRE(events.size() >= 3);
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    auto chunk = parser.parse(events[i]);
    CHECK(std::string_view(chunk["object"]) == "chat.completion.chunk");
    if (i == 0) CHECK(std::string_view(chunk["choices"].at(0)["delta"]["role"]) == "assistant");
    text += std::string(std::string_view(chunk["choices"].at(0)["delta"]["content"]));
  }
  CHECK(text == answer);
  CHECK(events.back() == "[DONE]");
}

TEST_CASE("bad requests get OpenAI error bodies with their status and code") {
  auto& f = shared_fixture();
  Reply malformed = request(f.port(), http::verb::post, "/v1/completions", "{nope");
  CHECK(malformed.status == 400);
  CHECK(field(malformed.body, "error", "code") == "malformed_json");
  Reply range = request(f.port(), http::verb::post, "/v1/completions", R"({"prompt":"x","top_p":0})");
  CHECK(range.status == 400);
  CHECK(field(range.body, "error", "code") == "bad_value");
  Reply missing = request(f.port(), http::verb::post, "/v1/chat/completions", R"({"prompt":"x"})");
  CHECK(missing.status == 400);
  CHECK(field(missing.body, "error", "code") == "missing_field");
  Reply big = request(f.port(), http::verb::post, "/v1/completions", R"({"prompt":")" + std::string(3000, 'a') + "\"}");
  CHECK(big.status == 413);
  CHECK(field(big.body, "error", "code") == "frame_too_large");
  Reply utf8 = request(f.port(), http::verb::post, "/v1/completions", "{\"prompt\":\"\xff\"}");
  CHECK(utf8.status == 400);
  CHECK(field(utf8.body, "error", "code") == "invalid_utf8");
  Reply get = request(f.port(), http::verb::get, "/v1/completions");
  CHECK(get.status == 400);
  Reply none = request(f.port(), http::verb::get, "/no/such/page.html");
  CHECK(none.status == 404);
  CHECK(field(none.body, "error", "code") == "not_found");
  Reply escape = request(f.port(), http::verb::get, "/../CMakeLists.txt");
  CHECK(escape.status == 400);
}

TEST_CASE("GET /v1/models, /health and static files") {
  auto& f = shared_fixture();
  Reply models = request(f.port(), http::verb::get, "/v1/models");
  CHECK(models.status == 200);
  CHECK(models.body.find(R"("object":"list","data":[{"id":"specd-test","object":"model")") != std::string::npos);
  Reply health = request(f.port(), http::verb::get, "/health");
  CHECK(health.status == 200);
  CHECK(health.body == R"({"status":"ok"})");
  Reply index = request(f.port(), http::verb::get, "/");
  CHECK(index.status == 200);
  CHECK(index.content_type == "text/html; charset=utf-8");
  CHECK(index.body == "<!doctype html><title>specd</title>");
  Reply js = request(f.port(), http::verb::get, "/js/app.js?v=2");
  CHECK(js.content_type == "text/javascript; charset=utf-8");
  CHECK(js.body == "console.log(1);");
}

TEST_CASE("GET /metrics: request counters, latency histograms, engine gauges and speculative counters") {
  auto& f = shared_fixture();
  Reply done = request(f.port(), http::verb::post, "/v1/completions",
                       R"({"prompt":"HAMLET:\n","max_tokens":8,"temperature":0})");
  REQUIRE(done.status == 200);
  Reply m = request(f.port(), http::verb::get, "/metrics");
  CHECK(m.status == 200);
  CHECK(m.content_type == "text/plain; version=0.0.4; charset=utf-8");
  for (const char* series :
       {"# TYPE specd_requests_total counter", "specd_requests_total{route=\"completions\",finish_reason=",
        "# TYPE specd_time_to_first_token_seconds histogram", "specd_time_to_first_token_seconds_bucket{le=\"+Inf\"}",
        "specd_inter_token_latency_seconds_count", "specd_e2e_request_latency_seconds_sum",
        "specd:num_requests_waiting 0", "specd_kv_slots_in_use{model=\"target\"} 0", "specd_kv_slots_total 32",
        "specd_spec_decode_num_drafts_total", "specd_spec_decode_num_draft_tokens_total",
        "specd_spec_decode_num_accepted_tokens_total",
        "specd_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"}",
        "specd_request_errors_total{route=\"completions\",code=\"bad_value\"}"}) {
    CAPTURE(series);
    CHECK(m.body.find(series) != std::string::npos);
  }
  CHECK(f.gateway().metrics().ttft().count() >= 1);
}

TEST_CASE("GET /v1/trace: the lanes' recent work as trace-event JSON; bad parameters are 400 bad_value") {
  auto& f = shared_fixture();
  REQUIRE(request(f.port(), http::verb::post, "/v1/completions", R"({"prompt":"ROMEO:","max_tokens":4})").status ==
          200);
  Reply trace = request(f.port(), http::verb::get, "/v1/trace?seconds=600");
  REQUIRE(trace.status == 200);
  CHECK(trace.content_type == "application/json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(trace.body);
  std::set<std::string> lanes, target_jobs;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view phase = e["ph"];
    if (phase == "M" && std::string_view(e["name"]) == "thread_name" && int64_t(e["pid"]) == 1) {
      lanes.insert(std::string(std::string_view(e["args"]["name"])));
    }
    if (phase == "X" && int64_t(e["pid"]) == 1 && int64_t(e["tid"]) == 1) {
      target_jobs.insert(std::string(std::string_view(e["name"])));
    }
  }
  CHECK(lanes.count("target lane") == 1);
  CHECK(lanes.count("draft lane") == 1);
  CHECK(target_jobs.count("target prefill") == 1);
  CHECK(double(doc["otherData"]["window_seconds"]) == 600);
  for (const char* bad : {"/v1/trace?seconds=0", "/v1/trace?seconds=abc", "/v1/trace?seconds=7200",
                          "/v1/trace?request=", "/v1/trace?request=%zz"}) {
    CAPTURE(bad);
    Reply refused = request(f.port(), http::verb::get, bad);
    CHECK(refused.status == 400);
    CHECK(field(refused.body, "error", "code") == "bad_value");
  }
}

TEST_CASE("a streamed burst's trace event says when its write to the client completed (SSE and WebSocket)") {
  GatewayFixture f(test_gateway_config());
  Reply sse = request(f.port(), http::verb::post, "/v1/completions",
                      R"({"prompt":"JULIET:\n","max_tokens":12,"temperature":0,"stream":true})");
  REQUIRE(sse.status == 200);
  const size_t sse_text_chunks = sse_events(sse.body).size() - 2;  // less the finish chunk and [DONE]
  auto ws = f.run([&]() -> asio::awaitable<std::map<std::string, Stream>> {
    net::WsClient client(co_await asio::this_coro::executor);
    co_await client.connect("127.0.0.1", f.port());
    co_await client.send_text(generate_json("probe", "ROMEO:\n", 12));
    co_return co_await collect(client, {"probe"});
  });
  REQUIRE_FALSE(ws.at("probe").finish_reason.empty());

  // Per request track (named by the engine's id for the request): its bursts.
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(f.engine().trace_json());
  std::map<int64_t, std::string> track_name;
  struct BurstEvent {
    double ts, written_us, handed_after_us;
  };
  std::map<int64_t, std::vector<BurstEvent>> bursts;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (int64_t(e["pid"]) != 2) continue;
    const std::string_view name = e["name"];
    if (name == "thread_name") track_name[int64_t(e["tid"])] = std::string(std::string_view(e["args"]["name"]));
    if (name != "burst") continue;
    simdjson::dom::object args = e["args"];
    double written = -1, handed = -1;
    if (args["written_us"].error() == simdjson::SUCCESS) written = double(args["written_us"]);
    if (args["handed_after_us"].error() == simdjson::SUCCESS) handed = double(args["handed_after_us"]);
    bursts[int64_t(e["tid"])].push_back({double(e["ts"]), written, handed});
  }
  int tracks_seen = 0;
  for (const auto& [tid, list] : bursts) {
    const std::string& name = track_name.at(tid);
    CAPTURE(name);
    const bool over_sse = name.starts_with("http-");
    CHECK((over_sse || name.ends_with(":probe")));
    tracks_seen += 1;
    // A WebSocket writes a frame per burst; SSE skips a burst without text (one holding
    // only the end-of-sequence token), which then has no written_us.
    size_t written = 0;
    for (const BurstEvent& b : list) {
      CHECK(b.handed_after_us >= 0);
      if (b.written_us < 0) continue;
      CHECK(b.written_us >= b.ts);
      written += 1;
    }
    CHECK(written == (over_sse ? sse_text_chunks : list.size()));
    if (!over_sse) CHECK(list.size() == static_cast<size_t>(ws.at("probe").frames - 1));  // less the done frame
  }
  CHECK(tracks_seen == 2);
}

TEST_CASE("GET /v1/trace on a server that records no trace is 404 not_found") {
  net::GatewayConfig c = test_gateway_config();
  c.engine.trace = false;
  GatewayFixture fixture(c);
  Reply off = request(fixture.port(), http::verb::get, "/v1/trace");
  CHECK(off.status == 404);
  CHECK(field(off.body, "error", "code") == "not_found");
}

TEST_CASE("with a bearer token every API route needs it, the static pages do not") {
  net::GatewayConfig c = test_gateway_config();
  c.auth_token = "s3cret";
  c.web_root = std::filesystem::temp_directory_path() / "specd_http_session_test_web_auth";
  std::filesystem::create_directories(c.web_root);
  std::ofstream(c.web_root / "index.html") << "<!doctype html><title>specd</title>";
  GatewayFixture fixture(c);
  CHECK(request(fixture.port(), http::verb::get, "/?access_token=s3cret").status == 200);  // the chat page
  CHECK(request(fixture.port(), http::verb::get, "/index.html").status == 200);
  CHECK(request(fixture.port(), http::verb::get, "/v1/models").status == 401);
  CHECK(request(fixture.port(), http::verb::get, "/metrics").status == 401);
  CHECK(request(fixture.port(), http::verb::get, "/v1/trace").status == 401);
  CHECK(request(fixture.port(), http::verb::get, "/health").status == 401);
  CHECK(request(fixture.port(), http::verb::get, "/health", "", "wrong").status == 401);
  CHECK(request(fixture.port(), http::verb::get, "/health", "", "s3cret").status == 200);
  Reply refused = request(fixture.port(), http::verb::post, "/v1/completions", R"({"prompt":"x"})");
  CHECK(refused.status == 401);
  CHECK(field(refused.body, "error", "code") == "unauthorized");
  fixture.run([&]() -> asio::awaitable<void> {
    net::WsClient anonymous(co_await asio::this_coro::executor);
    CHECK(co_await anonymous.connect("127.0.0.1", fixture.port()));
    CHECK(anonymous.handshake_status() == 401);
    net::WsClient member(co_await asio::this_coro::executor);
    net::WsClient::Options options;
    options.bearer_token = "s3cret";
    CHECK_FALSE(co_await member.connect("127.0.0.1", fixture.port(), options));
    net::WsClient query(co_await asio::this_coro::executor);
    options = {};
    options.target = "/v1/ws?access_token=s3cret";
    CHECK_FALSE(co_await query.connect("127.0.0.1", fixture.port(), options));
  });
}

TEST_CASE(
    "draining: /health 503 draining, requests and upgrades 503 shutting_down while a stream finishes; then closed") {
  net::GatewayConfig config = test_gateway_config();
  config.shutdown_deadline_seconds = 60;  // nothing is cancelled: the drain ends when the sessions do
  config.engine.sequence.max_seq_len = 1024;
  GatewayFixture f(config);
  const asio::ip::tcp::endpoint server(asio::ip::make_address("127.0.0.1"), f.port());
  asio::io_context io;
  // A connection that has not sent its request when the drain begins keeps it going
  // (the gateway answers it before closing), so the checks below do not race the stream.
  beast::tcp_stream held(io);
  held.connect(server);
  beast::tcp_stream streaming(io);
  streaming.connect(server);
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = R"({"prompt":"ROMEO:\n","max_tokens":300,"ignore_eos":true,"temperature":0,"stream":true})";
  req.prepare_payload();
  http::write(streaming, req);
  beast::flat_buffer stream_buffer;
  http::response_parser<http::string_body> stream_parser;
  http::read_header(streaming, stream_buffer, stream_parser);  // the first token is out: it runs
  REQUIRE(stream_parser.get().result_int() == 200);

  auto stopped = std::make_shared<std::atomic<bool>>(false);
  asio::co_spawn(asio::make_strand(f.io()), f.gateway().stop(), [stopped](std::exception_ptr) { *stopped = true; });
  for (int i = 0; i < 500 && !f.gateway().stopping(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Reply health = request(f.port(), http::verb::get, "/health");
  CHECK(health.status == 503);
  CHECK(health.body == R"({"status":"draining"})");
  Reply refused = request(f.port(), http::verb::post, "/v1/completions", R"({"prompt":"x","max_tokens":2})");
  CHECK(refused.status == 503);
  CHECK(field(refused.body, "error", "code") == "shutting_down");
  beast::websocket::stream<beast::tcp_stream> ws(io);
  ws.next_layer().connect(server);
  beast::websocket::response_type handshake;
  beast::error_code handshake_ec;
  ws.handshake(handshake, "127.0.0.1", "/v1/ws", handshake_ec);
  CHECK(handshake_ec);
  CHECK(handshake.result_int() == 503);
  CHECK(field(handshake.body(), "error", "code") == "shutting_down");

  http::read(streaming, stream_buffer, stream_parser);
  const auto events = sse_events(stream_parser.get().body());
  REQUIRE(events.size() >= 3);
  CHECK(events[events.size() - 2].find("\"finish_reason\":\"length\"") != std::string::npos);
  CHECK(events.back() == "[DONE]");
  CHECK_FALSE(*stopped);  // `held` is still open

  http::request<http::string_body> last{http::verb::get, "/health", 11};
  last.set(http::field::host, "127.0.0.1");
  http::write(held, last);
  beast::flat_buffer held_buffer;
  http::response<http::string_body> answer;
  http::read(held, held_buffer, answer);
  CHECK(answer.result_int() == 503);
  CHECK_FALSE(answer.keep_alive());
  for (int i = 0; i < 1000 && !*stopped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(*stopped);
  beast::tcp_stream late(io);
  beast::error_code ec;
  late.socket().connect(server, ec);
  CHECK(ec);  // the listening socket is closed
}

TEST_CASE("CORS: a preflight from a listed origin gets 204 and the Access-Control-* headers, without the token") {
  auto& f = shared_fixture();
  auto r = exchange(f.port(), http::verb::options, "/v1/chat/completions", "",
                    {{http::field::origin, "https://app.example"},
                     {http::field::access_control_request_method, "POST"},
                     {http::field::access_control_request_headers, "authorization, content-type"}});
  CHECK(r.result_int() == 204);
  CHECK(r[http::field::access_control_allow_origin] == "https://app.example");
  CHECK(r[http::field::access_control_allow_methods] == "GET, POST, OPTIONS");
  CHECK(r[http::field::access_control_allow_headers] == "authorization, content-type");
  CHECK(r[http::field::access_control_max_age] == "600");
  CHECK(r[http::field::vary] == "Origin");
  CHECK(r.body().empty());
}

TEST_CASE("CORS: a preflight from another origin, or without one, is 403 origin_not_allowed with no CORS headers") {
  auto& f = shared_fixture();
  auto r =
      exchange(f.port(), http::verb::options, "/v1/chat/completions", "",
               {{http::field::origin, "https://evil.example"}, {http::field::access_control_request_method, "POST"}});
  CHECK(r.result_int() == 403);
  CHECK(field(r.body(), "error", "code") == "origin_not_allowed");
  CHECK(r.count(http::field::access_control_allow_origin) == 0);
  r = exchange(f.port(), http::verb::options, "/v1/models", "", {});
  CHECK(r.result_int() == 403);
  CHECK(field(r.body(), "error", "code") == "origin_not_allowed");
}

TEST_CASE("CORS: responses to a listed origin carry Access-Control-Allow-Origin, SSE and errors too") {
  auto& f = shared_fixture();
  const std::vector<std::pair<http::field, std::string>> from_app{{http::field::origin, "https://app.example"},
                                                                  {http::field::content_type, "application/json"}};
  auto whole = exchange(f.port(), http::verb::post, "/v1/completions",
                        R"({"prompt":"ROMEO:","max_tokens":4,"temperature":0})", from_app);
  CHECK(whole.result_int() == 200);
  CHECK(whole[http::field::access_control_allow_origin] == "https://app.example");
  auto streamed = exchange(f.port(), http::verb::post, "/v1/chat/completions",
                           R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true})", from_app);
  CHECK(streamed.result_int() == 200);
  CHECK(streamed[http::field::content_type] == "text/event-stream");
  CHECK(streamed[http::field::access_control_allow_origin] == "https://app.example");
  auto refused = exchange(f.port(), http::verb::post, "/v1/completions", R"({"prompt":5})", from_app);
  CHECK(refused.result_int() == 400);
  CHECK(refused[http::field::access_control_allow_origin] == "https://app.example");
  auto models = exchange(f.port(), http::verb::get, "/v1/models", "", from_app);
  CHECK(models[http::field::access_control_allow_origin] == "https://app.example");
  auto other = exchange(f.port(), http::verb::get, "/v1/models", "", {{http::field::origin, "https://evil.example"}});
  CHECK(other.result_int() == 200);
  CHECK(other.count(http::field::access_control_allow_origin) == 0);
  auto none = exchange(f.port(), http::verb::get, "/v1/models", "", {});
  CHECK(none.count(http::field::access_control_allow_origin) == 0);
}

TEST_CASE("without max_tokens a request may generate the rest of the context (max_seq_len less the prompt)") {
  auto& f = shared_fixture();  // max_seq_len 256
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    CAPTURE(route);
    const std::string body = std::string(route) == "/v1/completions"
                                 ? R"({"prompt":"ROMEO:","ignore_eos":true,"temperature":0})"
                                 : R"({"messages":[{"role":"user","content":"Hi"}],"ignore_eos":true,"temperature":0})";
    Reply r = request(f.port(), http::verb::post, route, body);
    REQUIRE(r.status == 200);
    simdjson::dom::parser parser;
    auto doc = parser.parse(r.body);
    const int64_t prompt = int64_t(doc["usage"]["prompt_tokens"]);
    CHECK(int64_t(doc["usage"]["completion_tokens"]) == 256 - prompt);
    CHECK(std::string_view(doc["choices"].at(0)["finish_reason"]) == "length");
  }
}

TEST_CASE("unseeded samples at temperature 1 differ; the same seed gives the same sample twice (HTTP)") {
  auto& f = shared_fixture();
  auto text = [&](const std::string& seed) {
    Reply r = request(f.port(), http::verb::post, "/v1/completions",
                      R"({"prompt":"ROMEO:","max_tokens":24,"temperature":1,"ignore_eos":true)" + seed + "}");
    REQUIRE(r.status == 200);
    simdjson::dom::parser parser;
    return std::string(std::string_view(parser.parse(r.body)["choices"].at(0)["text"]));
  };
  const std::set<std::string> unseeded{text(""), text(""), text("")};
  CHECK(unseeded.size() == 3);
  CHECK(text(R"(,"seed":11)") == text(R"(,"seed":11)"));
}

namespace {

double metric(uint16_t port, const std::string& name) {
  Reply m = request(port, http::verb::get, "/metrics");
  const size_t at = m.body.find("\n" + name + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(m.body.substr(at + name.size() + 2));
}

// A prompt of several KV blocks (16 tokens each) that no other test sends, as JSON text.
const std::string kLongPromptJson =
    "MENENIUS:\\nThere was a time when all the body's members rebell'd against the belly, thus "
    "accused it: that only like a gulf it did remain i' the midst o' the body, idle and unactive.\\nFirst Citizen:\\n";

}  // namespace

TEST_CASE("n choices: each its own seeded sample with its index, the prompt once in usage, its KV blocks shared") {
  auto& f = shared_fixture();
  const std::string body =
      R"({"prompt":")" + kLongPromptJson + R"(","max_tokens":12,"temperature":1,"seed":21,"ignore_eos":true)";
  const double hits_before = metric(f.port(), "specd:prefix_cache_hits_total");
  const uint64_t finished_before = f.gateway().metrics().finished(net::Route::completions, FinishReason::length);
  Reply many = request(f.port(), http::verb::post, "/v1/completions", body + R"(,"n":4})");
  const double hits_after = metric(f.port(), "specd:prefix_cache_hits_total");
  REQUIRE(many.status == 200);
  // One request in the metrics, whatever its n.
  CHECK(f.gateway().metrics().finished(net::Route::completions, FinishReason::length) == finished_before + 1);
  Reply again = request(f.port(), http::verb::post, "/v1/completions", body + R"(,"n":4})");
  Reply one = request(f.port(), http::verb::post, "/v1/completions", body + "}");
  REQUIRE(again.status == 200);
  REQUIRE(one.status == 200);
  simdjson::dom::parser p1, p2, p3;
  auto doc = p1.parse(many.body);
  auto doc_again = p2.parse(again.body);
  auto single = p3.parse(one.body);
  simdjson::dom::array choices = doc["choices"];
  REQUIRE(choices.size() == 4);
  std::set<std::string> texts;
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(int64_t(choices.at(i)["index"]) == static_cast<int64_t>(i));
    const std::string text(std::string_view(choices.at(i)["text"]));
    CHECK(text == std::string_view(doc_again["choices"].at(i)["text"]));  // seeded: the same again
    CHECK(std::string_view(choices.at(i)["finish_reason"]) == "length");
    texts.insert(text);
  }
  CHECK(texts.size() == 4);  // choices are distinct samples
  CHECK(std::string_view(choices.at(0)["text"]) == std::string_view(single["choices"].at(0)["text"]));
  const int64_t prompt_tokens = int64_t(single["usage"]["prompt_tokens"]);
  CHECK(int64_t(doc["usage"]["prompt_tokens"]) == prompt_tokens);  // once
  CHECK(int64_t(doc["usage"]["completion_tokens"]) == 48);
  CHECK(int64_t(doc["usage"]["total_tokens"]) == prompt_tokens + 48);
  // Choices 1..3 started once choice 0 had prefilled: each mapped the prompt's full blocks.
  const int64_t full_blocks = (prompt_tokens - 1) / 16 * 16;
  REQUIRE(full_blocks >= 32);
  MESSAGE("prompt " << prompt_tokens
                    << " tokens; prefix cache hits during the n = 4 request: " << hits_after - hits_before);
  CHECK(hits_after - hits_before == static_cast<double>(3 * full_blocks));
}

TEST_CASE("n streamed chat choices: chunks carry their index and add up to the unstreamed choices") {
  auto& f = shared_fixture();
  const std::string body =
      R"({"messages":[{"role":"user","content":"Good morrow"}],"max_tokens":10,"temperature":1,"seed":5,)"
      R"("ignore_eos":true,"n":3)";
  Reply whole = request(f.port(), http::verb::post, "/v1/chat/completions", body + "}");
  Reply streamed = request(f.port(), http::verb::post, "/v1/chat/completions",
                           body + R"(,"stream":true,"stream_options":{"include_usage":true}})");
  REQUIRE(whole.status == 200);
  REQUIRE(streamed.status == 200);
  simdjson::dom::parser parser;
  auto doc = parser.parse(whole.body);
  std::vector<std::string> expected;
  for (size_t i = 0; i < 3; ++i) expected.emplace_back(std::string_view(doc["choices"].at(i)["message"]["content"]));
  std::vector<std::string> texts(3);
  std::vector<int> roles(3, 0), finishes(3, 0);
  const auto events = sse_events(streamed.body);
  REQUIRE(events.size() >= 5);
  CHECK(events.back() == "[DONE]");
  simdjson::dom::parser chunk_parser;
  for (size_t e = 0; e + 2 < events.size(); ++e) {
    auto chunk = chunk_parser.parse(events[e]);
    simdjson::dom::array choices = chunk["choices"];
    REQUIRE(choices.size() == 1);
    const int64_t index = choices.at(0)["index"];
    REQUIRE((index >= 0 && index < 3));
    auto delta = choices.at(0)["delta"];
    std::string_view role, content, finish;
    if (delta["role"].get(role) == simdjson::SUCCESS) roles[static_cast<size_t>(index)] += 1;
    if (delta["content"].get(content) == simdjson::SUCCESS) texts[static_cast<size_t>(index)] += std::string(content);
    if (choices.at(0)["finish_reason"].get(finish) == simdjson::SUCCESS) finishes[static_cast<size_t>(index)] += 1;
  }
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(texts[i] == expected[i]);
    CHECK(roles[i] == 1);
    CHECK(finishes[i] == 1);
  }
  auto usage = chunk_parser.parse(events[events.size() - 2]);
  CHECK(int64_t(usage["usage"]["completion_tokens"]) == 30);
  CHECK(int64_t(usage["usage"]["completion_tokens"]) == int64_t(doc["usage"]["completion_tokens"]));
  // A bad request with n > 1 is one 400, before any choice runs.
  Reply bad = request(f.port(), http::verb::post, "/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"x"}],"n":2,"top_p":5})");
  CHECK(bad.status == 400);
  CHECK(field(bad.body, "error", "code") == "bad_value");
}
