#pragma once
// What one streamed request looked like from the client: time to first token, the gaps
// between tokens, token and speculation counts, and how it ended. Built from the server's
// frames (WebSocket) or events (SSE) by one client coroutine; not shared between threads.
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::loadgen {

using Clock = std::chrono::steady_clock;

struct StreamRecord {
  std::optional<std::string> error;  // error code when the stream failed
  std::string finish_reason;
  double ttft_ms = -1;                 // request sent to first token; -1 when none came
  std::vector<double> inter_token_ms;  // per token after the first burst: burst gap / burst tokens
  std::vector<double> inter_burst_ms;  // gaps between bursts carrying tokens
  int64_t tokens = 0, bursts = 0, drafted = 0, accepted = 0;
  int64_t completion_tokens = -1;  // from the server's usage, when it sent one
  int64_t prompt_tokens = -1;      // likewise
  int64_t cached_tokens = -1;      // usage.prompt_tokens_details.cached_tokens: the server's prefix-cache hit
  double total_ms = 0;             // request sent to its end
  std::string text;                // the answer as streamed: a conversation's next turn carries it
  int32_t turn = 0;                // 1.. in a conversation (--turns), else 0
  int32_t retries = 0;             // resent on a new connection: a draining server refused it unstarted
};

// Times the bursts of one request.
class StreamTimer {
 public:
  explicit StreamTimer(Clock::time_point sent) : sent_(sent), last_(sent) {}
  void burst(Clock::time_point at, int64_t tokens, int64_t drafted, int64_t accepted, std::string_view text = {});
  void finish(Clock::time_point at, std::string finish_reason);
  void fail(Clock::time_point at, std::string code);
  bool ended() const { return ended_; }
  StreamRecord& record() { return record_; }

 private:
  Clock::time_point sent_, last_;
  bool ended_ = false;
  StreamRecord record_;
};

// Feeds one WebSocket frame of this request ({"type":"tokens"|"done"|"error",...});
// returns true when the request has ended. A frame that is not an object of a known
// type ends the stream with the error "bad_frame".
bool on_ws_frame(StreamTimer& timer, const boost::json::object& frame, Clock::time_point at);

// Feeds one SSE `data:` payload of an OpenAI-style stream ("[DONE]" or a chunk object);
// returns true when the stream has ended. The OpenAI format carries no per-chunk token
// count: a chunk with text counts as one token (its `token_ids` size if a server sends
// one), so inter-token gaps are gaps between chunks, and the usage chunk
// (stream_options.include_usage) sets the stream's token total.
bool on_sse_data(StreamTimer& timer, std::string_view data, Clock::time_point at);

}  // namespace specd::loadgen
