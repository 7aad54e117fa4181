#pragma once
// A session's bounded outbound queue: producers (engine handlers, posted onto the
// session's strand) push, one writer coroutine pops. "Limited" items (token frames)
// count against the bound and a push beyond it fails, so the caller can cancel the
// request as a slow consumer instead of blocking the engine; terminal items (done,
// error, close) are never refused, and there are at most a few per request in flight.
// Strand-bound: every call on the session's strand.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

namespace specd::net {

template <class T>
class OutboundQueue {
 public:
  OutboundQueue(boost::asio::any_io_executor executor, size_t limit) : wake_(executor), limit_(limit) {
    wake_.expires_at(boost::asio::steady_timer::time_point::max());
  }

  // False (and nothing queued) when a limited item would exceed the bound, or after close().
  bool push(T item, bool limited) {
    if (closed_ || (limited && limited_count_ >= limit_)) return false;
    items_.push_back({std::move(item), limited});
    if (limited) ++limited_count_;
    wake_.cancel();
    return true;
  }

  // The next item; nullopt once closed and drained.
  boost::asio::awaitable<std::optional<T>> pop() {
    while (items_.empty() && !closed_) {
      co_await wake_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    if (items_.empty()) co_return std::nullopt;
    Entry entry = std::move(items_.front());
    items_.pop_front();
    if (entry.limited) --limited_count_;
    co_return std::optional<T>(std::move(entry.item));
  }

  // Wakes the writer; items already queued are still popped.
  void close() {
    closed_ = true;
    wake_.cancel();
  }

  size_t size() const { return items_.size(); }
  bool closed() const { return closed_; }

 private:
  struct Entry {
    T item;
    bool limited;
  };
  boost::asio::steady_timer wake_;
  std::deque<Entry> items_;
  size_t limit_;
  size_t limited_count_ = 0;
  bool closed_ = false;
};

}  // namespace specd::net
