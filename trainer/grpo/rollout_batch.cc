#include "trainer/grpo/rollout_batch.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace allot::trainer::grpo {

int64_t TrainableTokens(const v1::Trajectory& t) {
  int64_t n = 0;
  for (const auto& s : t.segments()) {
    if (s.trainable()) n += s.ids_size();
  }
  return n;
}

std::vector<PolicyTurn> PolicyTurns(const v1::Trajectory& t) {
  std::vector<PolicyTurn> out;
  for (const auto& s : t.segments()) {
    if (s.trainable()) out.push_back({s.ids_size(), static_cast<int64_t>(s.max_tokens())});
  }
  return out;
}

Result<RolloutBatch> BuildRolloutBatch(const std::vector<Sample>& samples, int64_t pad_id) {
  if (samples.empty()) return InvalidArgument("rollout batch: no samples");
  const int64_t b = static_cast<int64_t>(samples.size());
  int64_t t_max = 2;
  for (const auto& s : samples) {
    int64_t len = 0;
    for (const auto& seg : s.trajectory->segments()) len += seg.ids_size();
    t_max = std::max(t_max, len);
  }
  RolloutBatch out;
  std::vector<int64_t> ids(b * t_max, pad_id);
  std::vector<int64_t> attn(b * t_max, 0);
  std::vector<float> mask(b * (t_max - 1), 0.0f);
  std::vector<float> rlp(b * (t_max - 1), 0.0f);
  std::vector<float> adv(b * (t_max - 1), 0.0f);
  for (int64_t i = 0; i < b; ++i) {
    const Sample& s = samples[i];
    const v1::Trajectory& t = *s.trajectory;
    int64_t len = 0;
    for (const auto& seg : t.segments()) len += seg.ids_size();
    const int64_t pad = t_max - len;
    int64_t j = 0;  // index of the token within the sequence
    for (const auto& seg : t.segments()) {
      const bool has_lp = seg.logprobs_size() == seg.ids_size();
      if (seg.trainable() && seg.logprobs_size() != 0 && !has_lp) {
        return InvalidArgument("episode " + t.episode_id() + ": a trainable segment has " +
                               std::to_string(seg.ids_size()) + " ids but " +
                               std::to_string(seg.logprobs_size()) + " logprobs");
      }
      double seg_adv = s.advantage;
      if (seg.step() > 0 && seg.step() <= s.step_advantages.size()) {
        seg_adv += s.step_advantages[seg.step() - 1];
      }
      for (int k = 0; k < seg.ids_size(); ++k, ++j) {
        const int64_t col = pad + j;
        ids[i * t_max + col] = static_cast<int64_t>(seg.ids(k));
        attn[i * t_max + col] = 1;
        ++out.total_tokens;
        // Target token j is scored at output column col - 1; the first token has no prefix.
        if (!seg.trainable() || j == 0) continue;
        const int64_t o = i * (t_max - 1) + col - 1;
        mask[o] = 1.0f;
        adv[o] = static_cast<float>(seg_adv);
        if (has_lp) {
          rlp[o] = seg.logprobs(k);
        } else {
          out.has_rollout_logp = false;
        }
        ++out.trainable_tokens;
      }
    }
  }
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  out.input_ids = torch::from_blob(ids.data(), {b, t_max}, i64).clone();
  out.attention_mask = torch::from_blob(attn.data(), {b, t_max}, i64).clone();
  out.loss_mask = torch::from_blob(mask.data(), {b, t_max - 1}, f32).clone();
  out.rollout_logp = torch::from_blob(rlp.data(), {b, t_max - 1}, f32).clone();
  out.advantages = torch::from_blob(adv.data(), {b, t_max - 1}, f32).clone();
  return out;
}

RolloutBatch SliceRows(const RolloutBatch& batch, int64_t begin, int64_t end) {
  RolloutBatch out;
  const at::Tensor attn = batch.attention_mask.slice(0, begin, end);
  // Left padding: drop leading columns that are padding in every row of the slice.
  const int64_t t = attn.size(1);
  const int64_t longest = attn.sum(1).max().item<int64_t>();
  const int64_t first = std::min(t - std::max<int64_t>(longest, 2), t - 2);
  out.input_ids = batch.input_ids.slice(0, begin, end).slice(1, first);
  out.attention_mask = attn.slice(1, first);
  out.loss_mask = batch.loss_mask.slice(0, begin, end).slice(1, first);
  out.rollout_logp = batch.rollout_logp.slice(0, begin, end).slice(1, first);
  out.advantages = batch.advantages.slice(0, begin, end).slice(1, first);
  out.trainable_tokens = out.loss_mask.sum().item<int64_t>();
  out.total_tokens = out.attention_mask.sum().item<int64_t>();
  out.has_rollout_logp = batch.has_rollout_logp;
  return out;
}

}  // namespace allot::trainer::grpo
