#include "trainer/grpo/step_batch.h"

#include <cstring>

namespace allot::trainer::grpo {
namespace {

constexpr uint32_t kMagic = 0x47525042;  // "GRPB"

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutBytes(const std::string& s) {
    Put<uint64_t>(s.size());
    out_ += s;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(std::string* s) {
    uint64_t n = 0;
    if (!Get(&n) || in_.size() - pos_ < n) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodeStepBatch(const StepBatch& b) {
  Writer w;
  w.Put<uint32_t>(kMagic);
  w.Put<uint8_t>(static_cast<uint8_t>(b.kind));
  w.PutBytes(b.error);
  w.Put<int64_t>(b.step);
  w.Put<double>(b.lr);
  w.Put<uint64_t>(b.trajectories.size());
  for (size_t i = 0; i < b.trajectories.size(); ++i) {
    w.PutBytes(b.trajectories[i].SerializeAsString());
    w.Put<double>(i < b.advantages.size() ? b.advantages[i] : 0.0);
    const std::vector<double> none;
    const auto& sa = i < b.step_advantages.size() ? b.step_advantages[i] : none;
    w.Put<uint64_t>(sa.size());
    for (double a : sa) w.Put<double>(a);
  }
  return w.Take();
}

Result<StepBatch> DecodeStepBatch(const std::string& bytes) {
  Reader r(bytes);
  StepBatch b;
  uint32_t magic = 0;
  uint8_t kind = 0;
  uint64_t n = 0;
  auto bad = [&](const std::string& what) {
    return DataLoss("grpo step batch from rank 0 (" + std::to_string(bytes.size()) +
                    " bytes): " + what);
  };
  if (!r.Get(&magic) || magic != kMagic) return bad("not a step batch");
  if (!r.Get(&kind) || (kind != 1 && kind != 2)) return bad("unknown kind");
  b.kind = static_cast<StepBatch::Kind>(kind);
  if (!r.GetBytes(&b.error) || !r.Get(&b.step) || !r.Get(&b.lr) || !r.Get(&n)) {
    return bad("truncated header");
  }
  if (n > bytes.size()) return bad("sample count " + std::to_string(n));
  b.trajectories.resize(n);
  b.advantages.resize(n);
  b.step_advantages.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string t;
    uint64_t k = 0;
    if (!r.GetBytes(&t) || !b.trajectories[i].ParseFromString(t)) {
      return bad("sample " + std::to_string(i) + ": not a trajectory");
    }
    if (!r.Get(&b.advantages[i]) || !r.Get(&k) || k > bytes.size()) {
      return bad("sample " + std::to_string(i) + ": truncated");
    }
    b.step_advantages[i].resize(k);
    for (uint64_t j = 0; j < k; ++j) {
      if (!r.Get(&b.step_advantages[i][j])) return bad("sample " + std::to_string(i));
    }
  }
  if (!r.done()) return bad("trailing bytes");
  return b;
}

std::vector<size_t> ShardIndices(size_t n, int rank, int world) {
  std::vector<size_t> out;
  if (world < 1 || rank < 0) return out;
  for (size_t i = static_cast<size_t>(rank); i < n; i += static_cast<size_t>(world)) {
    out.push_back(i);
  }
  return out;
}

}  // namespace allot::trainer::grpo
