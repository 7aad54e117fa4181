#include "tools/loadgen/client_requests.hpp"

namespace specd::loadgen {

ClientRequests::ClientRequests(const LoadgenOptions& options) : options_(options) {
  if (options.turns > 0) conversation_.emplace(options.prompt, options.next_turn_prompt());
}

std::string ClientRequests::next(const std::string& id, int64_t request_number) const {
  return conversation_ ? request_json(options_, id, request_number, *conversation_)
                       : request_json(options_, id, request_number);
}

bool ClientRequests::ended(StreamRecord& record) {
  record.turn = next_turn();
  ++done_;
  if (!conversation_) return true;
  if (record.error) return false;
  conversation_->answered(record.text);
  return true;
}

}  // namespace specd::loadgen
