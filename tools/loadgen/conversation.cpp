#include "tools/loadgen/conversation.hpp"

#include <boost/json/object.hpp>

namespace specd::loadgen {

boost::json::array Conversation::messages() const {
  boost::json::array messages;
  for (size_t i = 0; i < answers_.size(); ++i) {
    messages.push_back(boost::json::object{{"role", "user"}, {"content", user_message(i)}});
    messages.push_back(boost::json::object{{"role", "assistant"}, {"content", answers_[i]}});
  }
  messages.push_back(boost::json::object{{"role", "user"}, {"content", user_message(answers_.size())}});
  return messages;
}

// The speaker turns of the committed pair's chat template ("ROLE:\ncontent</s>"), with a
// newline where the template has EOS: text cannot carry the control token, and a turn's
// prompt must be the previous one's plus its answer for the server's prefix cache to hit.
std::string Conversation::transcript() const {
  std::string text;
  for (size_t i = 0; i < answers_.size(); ++i) {
    text += "USER:\n" + user_message(i) + "\nASSISTANT:\n" + answers_[i] + "\n";
  }
  return text + "USER:\n" + user_message(answers_.size()) + "\nASSISTANT:\n";
}

}  // namespace specd::loadgen
