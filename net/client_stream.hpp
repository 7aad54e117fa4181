#pragma once
// One client's outbound side of streamed generation, shared by the WebSocket session
// (many requests per connection, one frame per burst) and the SSE route (one request,
// one chunk per burst). The engine's handlers post each request's bursts and result onto
// the connection's strand, into one bounded queue; the sink's one writer coroutine takes
// them with next(), formats them for its wire and writes them. What both sinks share is
// decided here and nowhere else:
// - a client that reads slower than its requests generate (more than
//   `limits.outbound_queue_frames` bursts and replies queued) has the request whose burst
//   did not fit cancelled and ended with `slow_consumer`; that request's later bursts and
//   result are dropped, and neither the engine nor other clients wait for the reader;
// - once the server stops, new requests are refused with `shutting_down`
//   (refusal_while_stopping); shutdown() lets requests in flight finish until its
//   deadline, cancels the rest, and queues a Close once none is left.
// Results, the slow_consumer error and the Close never count against the bound: there
// are at most a few per request. Strand-bound: every member call on the connection's strand.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "actors/engine.hpp"
#include "net/metrics.hpp"
#include "net/protocol.hpp"
#include "net/recent_ids.hpp"
#include "net/request_timing.hpp"

namespace specd::net {

class Gateway;

// The refusal of a new request or WebSocket upgrade while the server stops (an error
// frame with `id`, or HTTP 503); nullopt while it serves.
std::optional<ProtocolError> refusal_while_stopping(const Gateway& gateway, std::optional<std::string> id = {});

class ClientStream : public std::enable_shared_from_this<ClientStream> {
 public:
  using Clock = std::chrono::steady_clock;
  // End the connection (WebSocket close 1012) after the items before it.
  struct Close {};
  // A burst or the result of the client's request `id`, a refusal of one of the
  // client's messages, or the close. A result with an error is that request's error.
  struct Item {
    std::string id;
    std::variant<Burst, GenerateResult, ProtocolError, Close> event;
  };

  // `route` names the requests in the metrics; `remember_finished` is how many ended
  // requests cancel() still knows (a cancel may cross its request's end on the wire).
  ClientStream(Gateway& gateway, boost::asio::any_io_executor strand, Route route, size_t remember_finished = 0);

  // Submits `request` to the engine as the client's `id` (unique among this stream's
  // requests in flight). Its bursts, when `stream_bursts`, then its result come out of next();
  // `counted`: how it counts in the metrics (request_timing.hpp).
  void submit(const std::string& id, GenerateRequest request, bool stream_bursts, Counted counted = Counted::request);
  // Cancels request `id` at the engine's next round. False when the stream never ran it
  // or has forgotten it; a request that already ended is known and nothing happens.
  bool cancel(const std::string& id);
  bool in_flight(const std::string& id) const { return requests_.count(id) != 0; }
  size_t in_flight_count() const { return requests_.size(); }
  // Queues the refusal of a client's message. It counts against the bound as a burst
  // does, so that a client sending without reading is not buffered without end: false
  // (nothing queued) when the queue is full.
  bool reply(ProtocolError error);
  // The next item to write; nullopt once closed and drained.
  boost::asio::awaitable<std::optional<Item>> next();
  // The server stops (Gateway::stop): requests in flight may finish until `deadline`,
  // then they are cancelled; a Close follows the last one's result.
  void shutdown(Clock::time_point deadline);
  // The connection ended: cancels the requests in flight and wakes the writer, which
  // still gets the items already queued.
  void close();

 private:
  struct Request {
    RequestHandle handle;
    bool failed = false;  // slow consumer: its error is queued, the rest is dropped
  };
  struct Entry {
    Item item;
    bool limited;  // counts against the bound
  };

  bool push(Item item, bool limited);
  void on_burst(const std::string& id, Burst burst);
  void on_done(const std::string& id, GenerateResult result);
  void close_when_idle();

  Gateway& gateway_;
  boost::asio::any_io_executor strand_;
  Route route_;
  size_t limit_;
  boost::asio::steady_timer wake_;      // the writer waits on it; push and close cancel it
  boost::asio::steady_timer deadline_;  // shutdown(): cancels what still runs; close() ends its wait
  std::deque<Entry> items_;
  size_t limited_count_ = 0;
  bool closed_ = false;
  std::unordered_map<std::string, Request> requests_;
  RecentIds finished_;
  bool shutting_down_ = false;
  bool close_queued_ = false;
};

}  // namespace specd::net
