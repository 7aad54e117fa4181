#include "net/recent_ids.hpp"

namespace specd::net {

void RecentIds::add(const std::string& id) {
  if (capacity_ == 0) return;
  if (auto it = where_.find(id); it != where_.end()) {
    order_.splice(order_.end(), order_, it->second);
    return;
  }
  if (where_.size() == capacity_) {
    where_.erase(order_.front());
    order_.pop_front();
  }
  where_.emplace(id, order_.insert(order_.end(), id));
}

}  // namespace specd::net
