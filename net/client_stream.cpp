#include "net/client_stream.hpp"

#include <boost/asio/post.hpp>

#include "actors/asio_aliases.hpp"
#include "actors/spawn.hpp"
#include "net/gateway.hpp"
#include "net/request_timing.hpp"

namespace specd::net {

namespace asio = boost::asio;
using actors::use_tuple;

std::optional<ProtocolError> refusal_while_stopping(const Gateway& gateway, std::optional<std::string> id) {
  if (!gateway.stopping()) return std::nullopt;
  return ProtocolError{ErrorCode::shutting_down, "the server is stopping", std::move(id)};
}

ClientStream::ClientStream(Gateway& gateway, asio::any_io_executor strand, Route route, size_t remember_finished)
    : gateway_(gateway),
      strand_(strand),
      route_(route),
      limit_(static_cast<size_t>(gateway.config().outbound_queue_frames)),
      wake_(strand),
      deadline_(strand),
      finished_(remember_finished) {
  wake_.expires_at(asio::steady_timer::time_point::max());
}

void ClientStream::submit(const std::string& id, GenerateRequest request, bool stream_bursts, Counted counted) {
  auto timing = std::make_shared<RequestTiming>(gateway_.metrics(), route_, id, gateway_.hooks(), counted);
  auto on_burst = [weak = weak_from_this(), strand = strand_, id, timing, stream_bursts](const Burst& burst) {
    timing->burst(burst);
    if (!stream_bursts) return;
    asio::post(strand, [weak, id, burst]() mutable {
      if (auto self = weak.lock()) self->on_burst(id, std::move(burst));
    });
  };
  auto on_done = [weak = weak_from_this(), strand = strand_, id, timing](GenerateResult result) {
    timing->done(result);
    asio::post(strand, [weak, id, result = std::move(result)]() mutable {
      if (auto self = weak.lock()) self->on_done(id, std::move(result));
    });
  };
  // The handlers post onto this strand, so the entry exists before either runs.
  requests_[id].handle = gateway_.engine().submit(std::move(request), std::move(on_burst), std::move(on_done));
}

bool ClientStream::cancel(const std::string& id) {
  if (auto it = requests_.find(id); it != requests_.end()) {
    it->second.handle.cancel();
    return true;
  }
  return finished_.contains(id);
}

bool ClientStream::reply(ProtocolError error) {
  std::string id = error.id.value_or("");
  return push({std::move(id), std::move(error)}, true);
}

void ClientStream::on_burst(const std::string& id, Burst burst) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second.failed) return;
  if (push({id, std::move(burst)}, true)) return;
  // The client does not read fast enough: end its request rather than slow the engine.
  it->second.failed = true;
  it->second.handle.cancel();
  gateway_.metrics().request_error(route_, ErrorCode::slow_consumer);
  GenerateResult failed;
  failed.finish_reason = FinishReason::error;
  failed.error = RequestError{ErrorCode::slow_consumer, "the client reads slower than the tokens arrive"};
  push({id, std::move(failed)}, false);
}

void ClientStream::on_done(const std::string& id, GenerateResult result) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  const bool failed = it->second.failed;
  requests_.erase(it);
  finished_.add(id);
  if (!failed) push({id, std::move(result)}, false);
  close_when_idle();
}

void ClientStream::shutdown(Clock::time_point deadline) {
  shutting_down_ = true;
  if (requests_.empty()) return close_when_idle();
  deadline_.expires_at(deadline);
  actors::spawn_logged(
      strand_,
      [self = shared_from_this()]() -> asio::awaitable<void> {
        auto [ec] = co_await self->deadline_.async_wait(use_tuple);
        if (ec) co_return;  // closed first: nothing left to cancel
        for (auto& [id, request] : self->requests_) request.handle.cancel();
      },
      "client stream shutdown deadline");
}

void ClientStream::close_when_idle() {
  if (!shutting_down_ || !requests_.empty() || close_queued_) return;
  close_queued_ = true;
  push({{}, Close{}}, false);
}

void ClientStream::close() {
  requests_.clear();  // dropping the handles cancels what still runs
  closed_ = true;
  wake_.cancel();
  deadline_.cancel();
}

bool ClientStream::push(Item item, bool limited) {
  if (closed_ || (limited && limited_count_ >= limit_)) return false;
  items_.push_back({std::move(item), limited});
  if (limited) ++limited_count_;
  wake_.cancel();
  return true;
}

asio::awaitable<std::optional<ClientStream::Item>> ClientStream::next() {
  while (items_.empty() && !closed_) co_await wake_.async_wait(use_tuple);
  if (items_.empty()) co_return std::nullopt;
  Entry entry = std::move(items_.front());
  items_.pop_front();
  if (entry.limited) --limited_count_;
  co_return std::optional<Item>(std::move(entry.item));
}

}  // namespace specd::net
