// The routes that answer from the tokenizer and the chat template without generating,
// over loopback: POST /tokenize in llama.cpp's form (content, add_special) and vLLM's
// (prompt, messages), /detokenize with ids outside the vocabulary refused, POST
// /apply-template with tools and tool turns, and GET /v1/models with the context
// length, taken from the models (max_seq_len 0) and bounded by the KV budget.
#include "tests/support/doctest_torch.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/gateway_fixture.hpp"

using namespace specd;
using namespace specd::testing;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

struct Reply {
  int status = 0;
  std::string body;
};

Reply post(uint16_t port, const std::string& target, const std::string& body) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{body.empty() ? http::verb::get : http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  return {static_cast<int>(res.result_int()), res.body()};
}

std::vector<int32_t> ids_of(simdjson::dom::element list) {
  std::vector<int32_t> ids;
  for (auto e : list.get_array()) ids.push_back(static_cast<int32_t>(int64_t(e)));
  return ids;
}

std::string code_of(const Reply& r) {
  simdjson::dom::parser parser;
  return std::string(std::string_view(parser.parse(r.body)["error"]["code"]));
}

GatewayFixture& fixture() {
  static GatewayFixture f([] {
    net::GatewayConfig c = test_gateway_config();
    c.engine.sequence.max_seq_len = 0;  // from the models: both say 1024
    c.engine.calibration_seconds = 0;
    return c;
  }());
  return f;
}

const Tokenizer& tokenizer() { return *fixture().engine().tokenizer(); }

}  // namespace

TEST_CASE("POST /tokenize: llama.cpp's content (no BOS unless add_special) and vLLM's prompt (BOS by default)") {
  simdjson::dom::parser parser;
  Reply r = post(fixture().port(), "/tokenize", R"({"content":"ROMEO: Good morrow."})");
  REQUIRE(r.status == 200);
  auto doc = parser.parse(r.body);
  const std::vector<int32_t> plain = tokenizer().encode("ROMEO: Good morrow.", false);
  CHECK(ids_of(doc["tokens"]) == plain);
  CHECK(int64_t(doc["count"]) == static_cast<int64_t>(plain.size()));
  CHECK(int64_t(doc["max_model_len"]) == 1024);

  const std::vector<int32_t> with_bos = tokenizer().encode("ROMEO: Good morrow.", true);
  REQUIRE(with_bos.size() == plain.size() + 1);
  r = post(fixture().port(), "/tokenize", R"({"content":"ROMEO: Good morrow.","add_special":true})");
  CHECK(ids_of(parser.parse(r.body)["tokens"]) == with_bos);
  r = post(fixture().port(), "/tokenize", R"({"prompt":"ROMEO: Good morrow."})");
  CHECK(ids_of(parser.parse(r.body)["tokens"]) == with_bos);
  r = post(fixture().port(), "/tokenize", R"({"prompt":"ROMEO: Good morrow.","add_special_tokens":false})");
  CHECK(ids_of(parser.parse(r.body)["tokens"]) == plain);
}

TEST_CASE("POST /tokenize with messages: the ids a chat completion's prompt has") {
  const std::vector<ChatMessage> messages{{"system", "Be brief."}, {"user", "Who goes there?"}};
  const std::vector<int32_t> expected = fixture().engine().chat_template()->encode(messages, tokenizer());
  CHECK(expected.size() == 32);  // as http_session_test's chat request counts its prompt
  Reply r =
      post(fixture().port(), "/tokenize",
           R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Who goes there?"}]})");
  REQUIRE(r.status == 200);
  simdjson::dom::parser parser;
  CHECK(ids_of(parser.parse(r.body)["tokens"]) == expected);
}

TEST_CASE("POST /tokenize refuses bodies without exactly one input, with codes") {
  Reply r = post(fixture().port(), "/tokenize", R"({"add_special":true})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "missing_field");
  r = post(fixture().port(), "/tokenize", R"({"content":"a","prompt":"b"})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/tokenize", R"({"content":5})");
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/tokenize", R"({"content":)");
  CHECK(code_of(r) == "malformed_json");
  r = post(fixture().port(), "/tokenize", "");  // GET
  CHECK(r.status == 400);
  CHECK(code_of(r) == "bad_value");
}

TEST_CASE("POST /detokenize turns ids back into text; ids outside the vocabulary are 400 bad_value") {
  const std::vector<int32_t> ids = tokenizer().encode("JULIET: O Romeo, Romeo!", false);
  std::string list;
  for (int32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  Reply r = post(fixture().port(), "/detokenize", R"({"tokens":[)" + list + "]}");
  REQUIRE(r.status == 200);
  simdjson::dom::parser parser;
  auto doc = parser.parse(r.body);
  CHECK(std::string_view(doc["content"]) == tokenizer().decode(ids));
  CHECK(std::string_view(doc["content"]) == "JULIET: O Romeo, Romeo!");
  CHECK(std::string_view(doc["prompt"]) == std::string_view(doc["content"]));

  r = post(fixture().port(), "/detokenize", R"({"tokens":[5,2048]})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "bad_value");
  CHECK(r.body.find("tokens[1] = 2048 is outside the vocabulary [0, 2048)") != std::string::npos);
  r = post(fixture().port(), "/detokenize", R"({"tokens":[-1]})");
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/detokenize", R"({"tokens":[1.5]})");
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/detokenize", R"({"tokens":"12"})");
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/detokenize", R"({})");
  CHECK(code_of(r) == "missing_field");
}

TEST_CASE("the committed pair's template teaches the <tool_call> syntax: the gateway parses answers as hermes") {
  CHECK(fixture().gateway().tool_call_format() == net::ToolCallFormat::hermes);
}

TEST_CASE("POST /apply-template renders tools, an assistant's tool_calls and a tool turn; refusals have codes") {
  Reply r = post(fixture().port(), "/apply-template",
                 R"({"messages":[{"role":"user","content":"Weather?"},)"
                 R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",)"
                 R"("function":{"name":"w","arguments":"{\"city\":\"Verona\"}"}}]},)"
                 R"({"role":"tool","tool_call_id":"c1","content":"Fair"}],)"
                 R"("tools":[{"type":"function","function":{"name":"w"}}]})");
  REQUIRE(r.status == 200);
  simdjson::dom::parser parser;
  CHECK(std::string_view(parser.parse(r.body)["prompt"]) ==
        "<s>SYSTEM:\nYou can call these functions:\n{\"type\": \"function\", \"function\": {\"name\": \"w\"}}\n"
        "To call one, answer with <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call> and nothing else.</s>"
        "USER:\nWeather?</s>ASSISTANT:\n<tool_call>{\"name\": \"w\", \"arguments\": {\"city\": "
        "\"Verona\"}}</tool_call></s>"
        "TOOL:\nFair</s>ASSISTANT:\n");
  r = post(fixture().port(), "/apply-template", R"({"messages":[]})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "bad_value");
  r = post(fixture().port(), "/apply-template", R"({"prompt":"x"})");
  CHECK(code_of(r) == "missing_field");
}

TEST_CASE("GET /v1/models states the context length: vLLM's max_model_len and llama.cpp-style meta") {
  Reply r = post(fixture().port(), "/v1/models", "");
  REQUIRE(r.status == 200);
  simdjson::dom::parser parser;
  auto model = parser.parse(r.body)["data"].at(0);
  CHECK(int64_t(model["max_model_len"]) == 1024);  // the committed pair's max_position_embeddings
  CHECK(int64_t(model["meta"]["n_ctx"]) == 1024);
  CHECK(int64_t(model["meta"]["n_vocab"]) == 2048);
  CHECK(fixture().engine().context_summary() == "max_seq_len 1024 (the models' max_position_embeddings)");
}

TEST_CASE("max_seq_len 0 is bounded by the KV budget: what one request's blocks hold, less the verify rows") {
  net::GatewayConfig c = test_gateway_config();
  c.engine.sequence.max_seq_len = 0;
  c.engine.calibration_seconds = 0;
  // 3072 bytes a token for the target (6 layers x 2 KV heads x 64 x K,V x BF16), 512 for
  // the draft: 32 blocks of 16 tokens.
  c.engine.kv_cache_memory = 32 * 16 * (3072 + 512);
  GatewayFixture f(c);
  CHECK(f.engine().config().sequence.max_seq_len == 32 * 16 - 8 - 1);  // k_max 8, and the bonus row
  CHECK(f.engine().context_summary() ==
        "max_seq_len 503 (the models' max_position_embeddings 1024, bounded by the KV budget)");
  simdjson::dom::parser parser;
  CHECK(int64_t(parser.parse(post(f.port(), "/v1/models", "").body)["data"].at(0)["max_model_len"]) == 503);
}
