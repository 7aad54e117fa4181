#pragma once
// One client's conversation in --turns mode: the user messages it sent and the answers it
// streamed back, from which each turn's request is built, so that every turn resends the
// whole conversation as a chat client does. Owned by one client coroutine.
#include <boost/json/array.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace specd::loadgen {

class Conversation {
 public:
  // `first` is turn 1's user message, `next` that of every later turn.
  Conversation(std::string first, std::string next) : first_(std::move(first)), next_(std::move(next)) {}

  // The turn the next request is, from 1.
  int32_t turn() const { return static_cast<int32_t>(answers_.size()) + 1; }

  // The conversation so far as chat messages: user, assistant, ..., this turn's user message.
  boost::json::array messages() const;

  // The same as one plain prompt: "USER:\n...\nASSISTANT:\n...\n" per turn, then
  // "USER:\n<this turn's message>\nASSISTANT:\n".
  std::string transcript() const;

  // Takes this turn's answer; the next turn follows it with a new user message.
  void answered(std::string text) { answers_.push_back(std::move(text)); }

 private:
  const std::string& user_message(size_t turn_index) const { return turn_index == 0 ? first_ : next_; }

  std::string first_, next_;
  std::vector<std::string> answers_;
};

}  // namespace specd::loadgen
