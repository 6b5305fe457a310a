#include "rollout/chunking.h"

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <utility>

#include "core/sha256.h"
#include "rollout/trajectory_convert.h"
#include "rollout/validate.h"

namespace allot::rollout {

std::vector<v1::TrajectoryChunk> ChunkTrajectory(v1::Trajectory trajectory, uint32_t attempt,
                                                 size_t chunk_bytes) {
  std::vector<v1::TrajectoryChunk> chunks;
  const size_t size = trajectory.ByteSizeLong();
  if (size <= chunk_bytes) {
    v1::TrajectoryChunk& c = chunks.emplace_back();
    c.set_episode_id(trajectory.episode_id());
    c.set_attempt(attempt);
    *c.mutable_whole() = std::move(trajectory);
    return chunks;
  }
  std::string bytes;
  trajectory.SerializeToString(&bytes);
  const uint32_t count = static_cast<uint32_t>((bytes.size() + chunk_bytes - 1) / chunk_bytes);
  chunks.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    v1::TrajectoryChunk& c = chunks.emplace_back();
    c.set_episode_id(trajectory.episode_id());
    c.set_attempt(attempt);
    const size_t begin = static_cast<size_t>(i) * chunk_bytes;
    c.set_part(bytes.substr(begin, std::min(chunk_bytes, bytes.size() - begin)));
    c.set_index(i);
    c.set_count(count);
    c.set_total_bytes(bytes.size());
  }
  return chunks;
}

std::vector<std::string> SerializeTrajectoryChunks(v1::Trajectory trajectory, uint32_t attempt,
                                                   size_t chunk_bytes) {
  std::vector<v1::TrajectoryChunk> chunks =
      ChunkTrajectory(std::move(trajectory), attempt, chunk_bytes);
  std::vector<std::string> out(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) chunks[i].SerializeToString(&out[i]);
  return out;
}

void AppendSerializedChunk(v1::WorkerMessage* msg, std::string* bytes) {
  static_assert(v1::WorkerMessage::kChunksFieldNumber == 1);
  msg->GetReflection()
      ->MutableUnknownFields(msg)
      ->AddLengthDelimited(v1::WorkerMessage::kChunksFieldNumber)
      ->swap(*bytes);
}

std::vector<std::string> TakeBackSerializedChunks(v1::WorkerMessage* msg) {
  google::protobuf::UnknownFieldSet* fields = msg->GetReflection()->MutableUnknownFields(msg);
  std::vector<std::string> out(static_cast<size_t>(fields->field_count()));
  for (int i = 0; i < fields->field_count(); ++i) {
    out[static_cast<size_t>(i)].swap(*fields->mutable_field(i)->mutable_length_delimited());
  }
  fields->Clear();
  return out;
}

Result<std::optional<v1::Trajectory>> TrajectoryAssembler::Add(v1::TrajectoryChunk& chunk) {
  Status valid = ValidateTrajectoryChunk(chunk, max_bytes_);
  if (!valid.ok()) {
    open_.erase(chunk.episode_id());
    return valid;
  }
  if (chunk.has_whole()) {
    open_.erase(chunk.episode_id());
    return std::optional<v1::Trajectory>(std::move(*chunk.mutable_whole()));
  }
  auto it = open_.find(chunk.episode_id());
  if (chunk.index() == 0) {
    // A restart of the same episode (e.g. a resend after reconnect) replaces the partial one.
    if (it == open_.end()) {
      if (open_.size() >= max_open_) {
        return ResourceExhausted("chunk " + chunk.episode_id() + ": more than " +
                                 std::to_string(max_open_) + " trajectories being reassembled");
      }
      it = open_.emplace(chunk.episode_id(), Partial{}).first;
    }
    it->second = Partial{.count = chunk.count(), .next = 0, .total = chunk.total_bytes()};
    it->second.bytes.reserve(chunk.total_bytes());
  } else if (it == open_.end()) {
    return InvalidArgument("chunk " + chunk.episode_id() + ": part " +
                           std::to_string(chunk.index()) + " without part 0");
  }
  Partial& p = it->second;
  if (chunk.index() != p.next || chunk.count() != p.count || chunk.total_bytes() != p.total) {
    open_.erase(it);
    return InvalidArgument("chunk " + chunk.episode_id() + ": part " +
                           std::to_string(chunk.index()) + " out of order or inconsistent");
  }
  if (p.bytes.size() + chunk.part().size() > p.total) {
    open_.erase(it);
    return InvalidArgument("chunk " + chunk.episode_id() + ": parts exceed total_bytes");
  }
  p.bytes.append(chunk.part());
  ++p.next;
  if (p.next < p.count) return std::optional<v1::Trajectory>();
  std::string bytes = std::move(p.bytes);
  open_.erase(it);
  if (bytes.size() != chunk.total_bytes()) {
    return InvalidArgument("chunk " + chunk.episode_id() + ": " + std::to_string(bytes.size()) +
                           " bytes received, total_bytes says " +
                           std::to_string(chunk.total_bytes()));
  }
  v1::Trajectory t;
  if (!t.ParseFromString(bytes)) {
    return InvalidArgument("chunk " + chunk.episode_id() + ": parts do not parse as a Trajectory");
  }
  if (t.episode_id() != chunk.episode_id()) {
    return InvalidArgument("chunk " + chunk.episode_id() +
                           ": trajectory carries another episode id");
  }
  return std::optional<v1::Trajectory>(std::move(t));
}

std::vector<v1::PolicyChunk> ChunkPolicy(const envs::runtime::PolicySnapshot& policy,
                                         size_t chunk_bytes) {
  const std::string digest = Sha256Raw(policy.bytes);
  const size_t n = policy.bytes.empty() ? 1 : (policy.bytes.size() + chunk_bytes - 1) / chunk_bytes;
  std::vector<v1::PolicyChunk> chunks(n);
  for (size_t i = 0; i < n; ++i) {
    v1::PolicyChunk& c = chunks[i];
    c.set_version(policy.version);
    c.set_kind(ToProto(policy.kind));
    c.set_index(static_cast<uint32_t>(i));
    c.set_count(static_cast<uint32_t>(n));
    c.set_total_bytes(policy.bytes.size());
    const size_t begin = i * chunk_bytes;
    if (begin < policy.bytes.size()) {
      c.set_data(policy.bytes.substr(begin, std::min(chunk_bytes, policy.bytes.size() - begin)));
    }
    c.set_sha256(digest);
    c.set_adapter_name(policy.adapter_name);
    c.set_adapter_uri(policy.adapter_uri);
    for (const envs::runtime::RoleAdapter& a : policy.role_adapters) {
      v1::RoleAdapter* r = c.add_role_adapters();
      r->set_role(a.role);
      r->set_adapter_name(a.adapter_name);
      r->set_version(a.version);
      r->set_adapter_uri(a.adapter_uri);
    }
  }
  return chunks;
}

Result<std::shared_ptr<const envs::runtime::PolicySnapshot>> PolicyAssembler::Add(
    const v1::PolicyChunk& c) {
  Status valid = ValidatePolicyChunk(c, max_bytes_, chunk_limit_);
  if (!valid.ok()) {
    version_ = 0;
    return valid;
  }
  if (c.index() == 0) {
    version_ = c.version();
    next_ = 0;
    head_ = c;
    head_.clear_data();
    bytes_.clear();
    bytes_.reserve(c.total_bytes());
  } else if (version_ != c.version() || next_ != c.index() || head_.count() != c.count() ||
             head_.total_bytes() != c.total_bytes() || head_.sha256() != c.sha256() ||
             head_.kind() != c.kind()) {
    version_ = 0;
    return InvalidArgument("policy version " + std::to_string(c.version()) + ": chunk " +
                           std::to_string(c.index()) + " out of order or inconsistent");
  }
  if (bytes_.size() + c.data().size() > c.total_bytes()) {
    version_ = 0;
    return InvalidArgument("policy version " + std::to_string(c.version()) +
                           ": chunks exceed total_bytes");
  }
  bytes_.append(c.data());
  ++next_;
  if (next_ < c.count()) return std::shared_ptr<const envs::runtime::PolicySnapshot>();
  version_ = 0;
  if (bytes_.size() != c.total_bytes()) {
    return DataLoss("policy version " + std::to_string(c.version()) + ": " +
                    std::to_string(bytes_.size()) + " bytes received, total_bytes says " +
                    std::to_string(c.total_bytes()));
  }
  if (Sha256Raw(bytes_) != c.sha256()) {
    return DataLoss("policy version " + std::to_string(c.version()) + ": sha256 mismatch");
  }
  auto snap = std::make_shared<envs::runtime::PolicySnapshot>();
  snap->version = c.version();
  snap->kind = FromProto(c.kind());
  snap->bytes = std::move(bytes_);
  snap->adapter_name = c.adapter_name();
  snap->adapter_uri = c.adapter_uri();
  for (const v1::RoleAdapter& r : c.role_adapters()) {
    snap->role_adapters.push_back({.role = r.role(),
                                   .adapter_name = r.adapter_name(),
                                   .version = r.version(),
                                   .adapter_uri = r.adapter_uri()});
  }
  bytes_.clear();
  return std::shared_ptr<const envs::runtime::PolicySnapshot>(std::move(snap));
}

}  // namespace allot::rollout
