#pragma once
// Stop strings over streamed text. The engine feeds it the text of accepted tokens only
// (a rejected draft's text never reaches it), burst by burst, and sends the client what
// feed() says is safe. One matcher per request, inside its RequestOutput (request_output.hpp).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

// Finds stop strings in text produced token by token. feed() takes the text of newly
// accepted tokens and returns the text that is safe to emit now: everything up to a stop
// string (which is never emitted), holding back a tail that could still be the start of a
// stop string. finish() returns the held-back tail when generation ends for another reason.
//
// Which stop wins: the stream stops at the first byte at which any stop string is complete
// (generation would halt there, so later text does not exist), and the output ends before
// the earliest-starting stop string complete at that byte. The result is the same however
// the text is cut into feed() calls.
//
// Matching is on bytes. For valid UTF-8 stops and text that equals matching on characters
// (UTF-8 is self-synchronising), and the held-back tail may end inside a character: every
// byte is emitted exactly once, and assembling whole characters is the caller's job.
class StopStringMatcher {
 public:
  // Throws SpecdError(invalid_argument) if any stop string is empty.
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;
    bool stopped = false;
  };

  // After a stop, further calls emit nothing and report stopped.
  Result feed(std::string_view text);
  // The held-back tail (empty after a stop); the matcher is empty afterwards.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  // Where the stop that fires in pending_ starts, or npos when none is complete.
  size_t find_stop() const;
  // Length of the longest suffix of pending_ that is a proper prefix of a stop string.
  size_t held_back_length() const;

  std::vector<std::string> stops_;
  std::string pending_;  // fed but not yet emitted; shorter than the longest stop between calls
  bool stopped_ = false;
};

}  // namespace specd
