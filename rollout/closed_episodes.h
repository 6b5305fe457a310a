// The ids of the most recently closed episodes, for deduplication, in bounded memory.
//
// The dispatcher erases an episode from its ledger when it closes and remembers only its id
// here. A trajectory that arrives for a remembered id is a duplicate (a worker resending after
// a reconnect); one for an id forgotten since is dropped as an orphan. Either way it is dropped:
// only the count it lands in differs. Resubmitting an id is refused while it is remembered.
// Not thread-safe; the dispatcher holds its lock.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_set>

namespace allot::rollout {

class ClosedEpisodes {
 public:
  // Remembers at most `capacity` ids (0: none), forgetting the oldest first.
  explicit ClosedEpisodes(size_t capacity) : capacity_(capacity) {
    ids_.reserve(capacity_ < kMaxReserve ? capacity_ : kMaxReserve);
  }

  void Insert(const std::string& id) {
    if (capacity_ == 0 || !ids_.insert(id).second) return;
    order_.push_back(id);
    if (order_.size() > capacity_) {
      ids_.erase(order_.front());
      order_.pop_front();
    }
  }
  bool Contains(const std::string& id) const { return ids_.count(id) > 0; }
  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  static constexpr size_t kMaxReserve = size_t{1} << 20;
  const size_t capacity_;
  std::unordered_set<std::string> ids_;
  std::deque<std::string> order_;  // insertion order, oldest first
};

}  // namespace allot::rollout
