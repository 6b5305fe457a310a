#include "models/packed_sequences.h"

#include <torch/torch.h>

namespace allot::models {
namespace {

at::Tensor ToTensor(const std::vector<int64_t>& v) {
  return torch::tensor(v, torch::kLong).view({static_cast<int64_t>(v.size())});
}

}  // namespace

PackedBatch PackPaddedBatch(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  const at::Tensor ids = input_ids.to(torch::kCPU, torch::kLong).contiguous();
  const at::Tensor mask = attention_mask.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t b = ids.size(0), t = ids.size(1);
  const int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* m = mask.data_ptr<int64_t>();
  PackedBatch p;
  std::vector<int64_t> stream, from, target, column;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t start = static_cast<int64_t>(stream.size());
    int64_t prev = -1;  // stream index of the row's previous real token
    for (int64_t j = 0; j < t; ++j) {
      if (m[i * t + j] == 0) continue;
      if (prev >= 0) {
        // In the padded layout, column j - 1 scores token j (TokenLogProbs' convention).
        from.push_back(prev);
        target.push_back(id[i * t + j]);
        column.push_back(i * (t - 1) + j - 1);
      }
      prev = static_cast<int64_t>(stream.size());
      stream.push_back(id[i * t + j]);
    }
    const int64_t n = static_cast<int64_t>(stream.size()) - start;
    if (n > 0) p.lengths.push_back(n);
  }
  p.input_ids = ToTensor(stream);
  p.from = ToTensor(from);
  p.target = ToTensor(target);
  p.column = ToTensor(column);
  return p;
}

at::Tensor SegmentPositions(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> pos;
  for (int64_t n : lengths) {
    for (int64_t k = 0; k < n; ++k) pos.push_back(k);
  }
  return ToTensor(pos);
}

}  // namespace allot::models
