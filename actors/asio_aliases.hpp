#pragma once
// The completion tokens and channel type every actor uses (STYLE.md: define them once).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <tuple>

namespace specd::actors {

namespace asio = boost::asio;
using boost::system::error_code;
template <class T = void>
using awaitable = asio::awaitable<T>;

// Expected outcomes come back as (error_code, value) tuples, not exceptions.
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// An actor's bounded mailbox. Concurrent: senders live on other strands and threads.
template <class Message>
using Mailbox = asio::experimental::concurrent_channel<void(error_code, Message)>;

// Receives an actor's next message; nullopt once the mailbox is closed.
template <class Message>
awaitable<std::optional<Message>> receive(Mailbox<Message>& mailbox) {
  std::tuple<error_code, Message> received = co_await mailbox.async_receive(use_tuple);
  if (std::get<0>(received)) co_return std::nullopt;
  co_return std::optional<Message>(std::move(std::get<1>(received)));
}

}  // namespace specd::actors
