#include "envs/runtime/conversation.h"

namespace allot::envs::runtime {

void Conversation::Append(Segment segment) {
  num_ids_ += segment.ids.size();
  segments_.push_back(std::move(segment));
}

std::vector<int64_t> Conversation::ids() const {
  std::vector<int64_t> out;
  out.reserve(num_ids_);
  for (const Segment& s : segments_) out.insert(out.end(), s.ids.begin(), s.ids.end());
  return out;
}

}  // namespace allot::envs::runtime
