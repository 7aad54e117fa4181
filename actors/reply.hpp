#pragma once
// A one-shot answer from an actor to the coroutine that asked: the asker puts a Reply
// in its message and awaits get(); the actor calls set() exactly once, from any thread. The awaiting coroutine resumes
// on its own executor.
//
// Written on a mutex and a stored completion handler rather than a one-slot channel,
// which costs a channel and its buffer per question. (The channel version also met a
// GCC 12.2 coroutine miscompilation, a reply read as a destroyed variant; specd builds
// with clang, see CMakeLists.txt.)
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "actors/asio_aliases.hpp"

namespace specd::actors {

template <class T>
class Reply {
 public:
  Reply() : state_(std::make_shared<State>()) {}

  void set(T value) const {
    std::unique_lock lock(state_->mutex);
    if (state_->done) return;
    state_->done = true;
    if (!state_->waiter) {
      state_->value = std::move(value);
      return;
    }
    auto waiter = std::move(state_->waiter);
    lock.unlock();
    waiter(std::move(value));
  }

  awaitable<T> get() const {
    auto state = state_;
    auto initiation = [state](auto handler) {
      std::unique_lock lock(state->mutex);
      if (state->done) {
        lock.unlock();
        resume(std::move(handler), std::move(state->value));
        return;
      }
      auto shared = std::make_shared<decltype(handler)>(std::move(handler));
      state->waiter = [shared](std::optional<T> v) { resume(std::move(*shared), std::move(v)); };
    };
    // The initiation is a named local: no temporary with a destructor in the co_await.
    std::optional<T> value = co_await asio::async_initiate<decltype(asio::use_awaitable), void(std::optional<T>)>(
        std::move(initiation), asio::use_awaitable);
    co_return std::move(*value);
  }

 private:
  struct State {
    std::mutex mutex;
    bool done = false;
    std::optional<T> value;
    std::function<void(std::optional<T>)> waiter;
  };

  template <class Handler>
  static void resume(Handler handler, std::optional<T> value) {
    auto executor = asio::get_associated_executor(handler);
    asio::post(executor, [handler = std::move(handler), value = std::move(value)]() mutable {
      std::move(handler)(std::move(value));
    });
  }

  std::shared_ptr<State> state_;
};

// Sends an actor a message that carries a Reply<T> and awaits the answer: the
// request/response half of every actor's public functions. `make(reply)` builds the message.
template <class T, class Channel, class MakeMessage>
awaitable<T> ask(Channel& mailbox, MakeMessage make) {  // make by value: the coroutine is lazy
  Reply<T> reply;
  auto message = make(reply);  // converted to the mailbox's variant by async_send
  co_await mailbox.async_send(error_code{}, std::move(message), asio::use_awaitable);
  co_return co_await reply.get();
}

}  // namespace specd::actors
