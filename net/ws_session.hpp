#pragma once
// One WebSocket connection on /v1/ws (DESIGN.md "Wire protocol"): many generate
// requests in flight, told apart by the client's ids; one `tokens` frame per burst,
// then `done` (or `error`) per request. One reader coroutine and one writer coroutine;
// the writer drains the connection's ClientStream (net/client_stream.hpp: the bounded
// queue, `slow_consumer`, shutdown). Engine handlers post onto this session's strand;
// all state lives there. Disconnect cancels the connection's requests; a server
// shutdown lets them finish until the deadline, cancels the rest (done: cancelled) and
// closes with 1012. A cancel of a request that already finished is ignored, since
// clients race cancels against completion; only ids the connection never ran (or has
// forgotten, beyond limits.finished_ids_per_connection) get unknown_id.
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "net/client_stream.hpp"
#include "net/http_session.hpp"
#include "net/protocol.hpp"

namespace specd::net {

class Gateway;

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  using Stream = boost::beast::websocket::stream<boost::beast::tcp_stream>;

  WsSession(std::shared_ptr<Gateway> gateway, boost::beast::tcp_stream stream);
  // Accepts the upgrade and serves the connection until it closes.
  boost::asio::awaitable<void> run(HttpRequest upgrade);

 private:
  // A message from the client: its text, or the refusal of a bad frame.
  struct Received {
    std::string text;
    std::optional<ProtocolError> refused;
  };

  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<std::optional<Received>> read_message();
  boost::asio::awaitable<void> write_loop();
  void handle_message(const std::string& text);
  void start_generate(GenerateParams params);
  void cancel_request(const std::string& id);
  void send_error(ProtocolError error);

  std::shared_ptr<Gateway> gateway_;
  Stream ws_;
  boost::asio::any_io_executor strand_;
  // The requests in flight and the frames waiting for the writer.
  std::shared_ptr<ClientStream> outbound_;
  uint64_t number_;  // connection number: engine ids are "ws<number>:<client id>"
};

}  // namespace specd::net
