// Conversation: one multi-turn context in the token space of one endpoint.
//
// Segments are appended, never rewritten: a turn's prompt is the concatenation of every id so
// far, so appending a turn never re-tokenizes earlier ones (the multi-turn token drift of
// verl #3720 and slime #2263 cannot happen by construction).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "envs/runtime/trajectory.h"

namespace allot::envs::runtime {

class Conversation {
 public:
  explicit Conversation(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  // The endpoint whose tokenizer and sampler produced every id here.
  const std::string& endpoint() const { return endpoint_; }

  void Append(Segment segment);
  const std::vector<Segment>& segments() const { return segments_; }
  std::vector<Segment> TakeSegments() { return std::move(segments_); }

  // Every id in order: the prompt of the next turn.
  std::vector<int64_t> ids() const;
  size_t num_ids() const { return num_ids_; }

 private:
  std::string endpoint_;
  std::vector<Segment> segments_;
  size_t num_ids_ = 0;
};

}  // namespace allot::envs::runtime
