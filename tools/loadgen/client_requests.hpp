#pragma once
// What one loadgen client sends, one request after another: the same request
// --requests times, or with --turns the turns of one conversation that grows by the
// answers the client streams back. Owned by one client coroutine.
#include <cstdint>
#include <optional>
#include <string>

#include "tools/loadgen/conversation.hpp"
#include "tools/loadgen/loadgen_options.hpp"
#include "tools/loadgen/stream_record.hpp"

namespace specd::loadgen {

class ClientRequests {
 public:
  explicit ClientRequests(const LoadgenOptions& options);

  int32_t count() const { return options_.requests_per_client(); }
  // The turn of the next request (1..), or 0 outside a conversation.
  int32_t next_turn() const { return conversation_ ? done_ + 1 : 0; }
  // The next request's JSON (request_json).
  std::string next(const std::string& id, int64_t request_number) const;
  // Tags `record` with its turn and takes its answer into the conversation. Returns false
  // when the client must stop: a failed turn has no answer to continue from.
  bool ended(StreamRecord& record);

 private:
  const LoadgenOptions& options_;
  std::optional<Conversation> conversation_;
  int32_t done_ = 0;
};

}  // namespace specd::loadgen
