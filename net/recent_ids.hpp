#pragma once
// The most recent `capacity` distinct ids added, the least recently added forgotten
// first. A WebSocket session keeps its finished request ids here, so that a cancel
// crossing its request's done frame is told apart from a cancel of an id never used,
// while memory stays bounded however many requests a connection sends.
// Not thread-safe: one session's strand.
#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>

namespace specd::net {

class RecentIds {
 public:
  explicit RecentIds(size_t capacity) : capacity_(capacity) {}

  // An id already held becomes the most recent again.
  void add(const std::string& id);
  bool contains(const std::string& id) const { return where_.count(id) != 0; }
  size_t size() const { return where_.size(); }

 private:
  size_t capacity_;
  std::list<std::string> order_;  // least recent first
  std::unordered_map<std::string, std::list<std::string>::iterator> where_;
};

}  // namespace specd::net
