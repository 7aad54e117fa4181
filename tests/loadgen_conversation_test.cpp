// loadgen --turns: the requests of a conversation, turn by turn, in chat and plain modes
// over both transports, byte for byte.
#include <doctest/doctest.h>

#include "tools/loadgen/client_requests.hpp"
#include "tools/loadgen/conversation.hpp"
#include "tools/loadgen/loadgen_options.hpp"

using namespace specd::loadgen;

namespace {

LoadgenOptions turn_options(bool chat, Transport transport) {
  LoadgenOptions o;
  o.prompt = "Hi";
  o.turn_prompt = "And then?";
  o.turns = 3;
  o.chat = chat;
  o.transport = transport;
  o.max_tokens = 8;
  o.k = "4";
  return o;
}

}  // namespace

TEST_CASE("a chat conversation resends every earlier message and answer, then the new user message") {
  const LoadgenOptions o = turn_options(true, Transport::ws);
  Conversation c(o.prompt, o.next_turn_prompt());
  const std::string tail =
      R"("max_tokens":8,"temperature":0,"top_p":1,"top_k":0,"speculative":{"enabled":true,"k":4}})";
  CHECK(c.turn() == 1);
  CHECK(request_json(o, "lg0", 0, c) ==
        R"({"type":"generate","id":"lg0","messages":[{"role":"user","content":"Hi"}],)" + tail);
  c.answered("Good day.");
  CHECK(c.turn() == 2);
  CHECK(request_json(o, "lg5", 5, c) ==
        R"({"type":"generate","id":"lg5","messages":[{"role":"user","content":"Hi"},)"
        R"({"role":"assistant","content":"Good day."},{"role":"user","content":"And then?"}],)" +
            tail);
  c.answered("\nNo more.");
  CHECK(c.turn() == 3);
  CHECK(request_json(o, "lg9", 9, c) ==
        R"({"type":"generate","id":"lg9","messages":[{"role":"user","content":"Hi"},)"
        R"({"role":"assistant","content":"Good day."},{"role":"user","content":"And then?"},)"
        R"({"role":"assistant","content":"\nNo more."},{"role":"user","content":"And then?"}],)" +
            tail);
}

TEST_CASE("a plain conversation is one prompt of speaker turns, each turn's prompt extending the last one's") {
  const LoadgenOptions o = turn_options(false, Transport::sse);
  Conversation c(o.prompt, o.next_turn_prompt());
  const std::string head = R"({"model":"specd","stream":true,"stream_options":{"include_usage":true},"prompt":)";
  const std::string tail =
      R"(,"max_tokens":8,"temperature":0,"top_p":1,"top_k":0,"speculative":{"enabled":true,"k":4}})";
  const std::string turn1 = "USER:\nHi\nASSISTANT:\n";
  CHECK(c.transcript() == turn1);
  CHECK(request_json(o, "", 0, c) == head + R"("USER:\nHi\nASSISTANT:\n")" + tail);
  c.answered("Good day.");
  const std::string turn2 = turn1 + "Good day.\nUSER:\nAnd then?\nASSISTANT:\n";
  CHECK(c.transcript() == turn2);
  CHECK(request_json(o, "", 1, c) ==
        head + R"("USER:\nHi\nASSISTANT:\nGood day.\nUSER:\nAnd then?\nASSISTANT:\n")" + tail);
  c.answered("No more.");
  CHECK(c.transcript() == turn2 + "No more.\nUSER:\nAnd then?\nASSISTANT:\n");
  CHECK(
      request_json(o, "", 2, c) ==
      head +
          R"("USER:\nHi\nASSISTANT:\nGood day.\nUSER:\nAnd then?\nASSISTANT:\nNo more.\nUSER:\nAnd then?\nASSISTANT:\n")" +
          tail);
}

TEST_CASE("without --turn-prompt every turn repeats the prompt, and --turns sets the requests per client") {
  LoadgenOptions o;
  o.prompt = "ROMEO:";
  CHECK(o.requests_per_client() == 4);
  o.turns = 3;
  CHECK(o.requests_per_client() == 3);
  Conversation c(o.prompt, o.next_turn_prompt());
  c.answered("Ay.");
  CHECK(c.transcript() == "USER:\nROMEO:\nASSISTANT:\nAy.\nUSER:\nROMEO:\nASSISTANT:\n");
}

TEST_CASE("a client's conversation takes each streamed answer into the next turn and stops after a failed turn") {
  const LoadgenOptions o = turn_options(false, Transport::ws);
  ClientRequests requests(o);
  CHECK(requests.count() == 3);
  CHECK(requests.next_turn() == 1);
  CHECK(requests.next("lg0", 0).find(R"("prompt":"USER:\nHi\nASSISTANT:\n",)") != std::string::npos);
  StreamRecord first;
  first.text = "Good day.";
  CHECK(requests.ended(first));
  CHECK(first.turn == 1);
  CHECK(requests.next_turn() == 2);
  CHECK(requests.next("lg1", 1).find(
            R"("prompt":"USER:\nHi\nASSISTANT:\nGood day.\nUSER:\nAnd then?\nASSISTANT:\n",)") != std::string::npos);
  StreamRecord failed;
  failed.error = "overloaded";
  failed.text = "Go";  // partial: not an answer to build on
  CHECK_FALSE(requests.ended(failed));
  CHECK(failed.turn == 2);
  CHECK(requests.next_turn() == 3);
}

TEST_CASE("without --turns a client repeats the one request and its records carry no turn") {
  LoadgenOptions o;
  o.prompt = "Hi";
  o.requests = 2;
  ClientRequests requests(o);
  CHECK(requests.count() == 2);
  CHECK(requests.next_turn() == 0);
  StreamRecord r;
  r.text = "Good day.";
  r.error = "overloaded";
  CHECK(requests.ended(r));
  CHECK(r.turn == 0);
  CHECK(requests.next("lg1", 1) == request_json(o, "lg1", 1));
}

TEST_CASE("--session keys client i as PREFIX-i: the WebSocket target carries it percent-encoded") {
  LoadgenOptions o;
  CHECK(session_key(o, 3).empty());
  CHECK(ws_target(o, 3) == "/v1/ws");
  o.session = "user 7/a";
  CHECK(session_key(o, 3) == "user 7/a-3");
  CHECK(ws_target(o, 3) == "/v1/ws?session=user%207%2Fa-3");
}
