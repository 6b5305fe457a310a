#include "trainer/grpo/policy_update.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/multi_tensor_adamw.h"

namespace allot::trainer::grpo {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

Status UpdatePolicy(models::CausalLMImpl& model, torch::optim::AdamW& optimizer,
                    const RolloutBatch& batch, const UpdateOptions& options, StepMetrics* m,
                    int64_t* ref_passes) {
  comm::Communicator* comm =
      options.comm != nullptr && options.comm->distributed() ? options.comm : nullptr;
  const int64_t b = batch.input_ids.defined() ? batch.input_ids.size(0) : 0;
  if (b == 0 && comm == nullptr) return InvalidArgument("grpo update: empty batch");
  const int64_t rows = std::max<int64_t>(
      1, options.micro_batch_size > 0 ? std::min(options.micro_batch_size, b) : b);
  std::vector<RolloutBatch> micro;
  // Log-probs are formed only where the loss looks (completion tokens, not prompts): the mask
  // as it arrived, before it moves.
  std::vector<at::Tensor> scored;
  // The loss's per-token tensors go to the model's device (a GPU learner's batch arrives in host
  // memory); the ids stay on the host, where TokenLogProbs packs them before moving them.
  const at::Device device = model.device();
  for (int64_t r = 0; r < b; r += rows) {
    RolloutBatch mb = SliceRows(batch, r, std::min(b, r + rows));
    scored.push_back(mb.loss_mask);
    if (device != mb.loss_mask.device()) {
      for (at::Tensor* t : {&mb.loss_mask, &mb.rollout_logp, &mb.advantages}) {
        if (t->defined()) *t = t->to(device);
      }
    }
    micro.push_back(std::move(mb));
  }
  AggregationTotals totals = b > 0 ? TotalsOf(batch.loss_mask) : AggregationTotals{};
  bool has_rollout_logp = b == 0 || batch.has_rollout_logp;
  if (comm != nullptr) {
    // The union batch's denominators and TIS check (TIS needs every rank's log-probs).
    std::vector<double> u = {totals.tokens, totals.sequences, has_rollout_logp ? 0.0 : 1.0};
    ALLOT_RETURN_IF_ERROR(comm->AllReduceScalars(u, /*mean=*/false));
    totals.tokens = u[0];
    totals.sequences = u[1];
    has_rollout_logp = u[2] == 0.0;
  }
  // Truncated IS without the rollout engine's log-probs would be no TIS at all: an error, not a
  // switch turned off in silence. (Through the rollout layer this cannot happen: a worker refuses
  // a trainable segment without one log-prob per id, rollout/validate.cc, and an env's episode
  // refuses a policy turn whose endpoint returned none, naming its URL, envs/runtime/episode.cc.)
  if (options.loss.truncated_is && !has_rollout_logp) {
    return InvalidArgument(
        "grpo update: truncated IS (grpo.truncated_is) needs the rollout log-prob of every "
        "trainable token, and a trainable segment came without them");
  }
  const bool use_tis = options.loss.truncated_is;
  auto logprobs = [&](size_t i) {
    return model.TokenLogProbs(micro[i].input_ids, micro[i].attention_mask, options.chunk_tokens,
                               options.temperature, scored[i]);
  };

  const auto t0 = Clock::now();
  model.train();
  // Each rank draws its own dropout masks (rank 0's are those of a single learner), from a
  // generator of the update's own: an `allot serve` or env in the same process draws from the
  // default CPU generator at any time, and masks drawn from it were a function of timing. The
  // default generators are seeded too: a CUDA device's dropout draws from its own.
  const uint64_t dropout_seed = options.dropout_seed + (comm != nullptr ? comm->rank() : 0);
  torch::manual_seed(dropout_seed);
  model.SetLoraDropoutGenerator(at::detail::createCPUGenerator(dropout_seed));
  std::vector<at::Tensor> old(micro.size()), ref(micro.size());
  if (options.updates > 1) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < micro.size(); ++i) old[i] = logprobs(i).detach();
  }
  std::vector<at::Tensor> params = model.LoraParameters();
  if (options.loss.kl_coef > 0.0) {
    torch::NoGradGuard no_grad;
    const std::vector<at::Tensor>* r = options.reference_lora;
    if (r != nullptr && r->size() != params.size()) {
      return InvalidArgument("grpo reference policy: " + std::to_string(r->size()) +
                             " LoRA tensors for an adapter of " + std::to_string(params.size()));
    }
    std::vector<at::Tensor> current;
    if (r != nullptr) {
      for (size_t k = 0; k < params.size(); ++k) {
        current.push_back(params[k].detach().clone());
        params[k].detach().copy_((*r)[k]);
      }
    } else {
      model.SetLoraEnabled(false);
    }
    for (size_t i = 0; i < micro.size(); ++i) ref[i] = logprobs(i).detach();
    if (r != nullptr) {
      for (size_t k = 0; k < params.size(); ++k) params[k].detach().copy_(current[k]);
    } else {
      model.SetLoraEnabled(true);
    }
    if (ref_passes != nullptr) *ref_passes += static_cast<int64_t>(micro.size());
  }

  const double tokens = std::max(totals.tokens, 1.0);
  double fwd_bwd = Seconds(t0), opt_s = 0.0;
  PolicyLossStats acc;
  double loss_sum = 0.0, entropy_sum = 0.0, grad_norm = 0.0;
  // Sum of |rollout - learner| log-prob over trainable tokens, on the first pass (the weights
  // the update starts from).
  double rollout_diff_sum = 0.0;
  for (int u = 0; u < options.updates; ++u) {
    const auto tu = Clock::now();
    optimizer.zero_grad();
    for (size_t i = 0; i < micro.size(); ++i) {
      const RolloutBatch& mb = micro[i];
      PolicyLossInputs in;
      in.logp = logprobs(i);
      in.old_logp = options.updates > 1 ? old[i] : in.logp.detach();
      if (use_tis) in.rollout_logp = mb.rollout_logp;
      if (u == 0 && has_rollout_logp && mb.rollout_logp.defined()) {
        rollout_diff_sum +=
            ((in.logp.detach() - mb.rollout_logp).abs() * mb.loss_mask).sum().item<double>();
      }
      if (options.loss.kl_coef > 0.0) in.ref_logp = ref[i];
      in.advantages = mb.advantages;
      in.mask = mb.loss_mask;
      PolicyLossOptions lo = options.loss;
      lo.truncated_is = use_tis;
      ALLOT_ASSIGN_OR_RETURN(PolicyLossResult r, ComputePolicyLoss(in, lo, totals));
      r.loss.backward();
      const PolicyLossStats& st = r.stats;
      const double w = st.tokens / tokens / options.updates;  // token share of this pass
      loss_sum += r.loss.item<double>() / options.updates;
      acc.policy_loss += st.policy_loss / options.updates;
      acc.kl += st.kl * w;
      acc.clip_frac_low += st.clip_frac_low * w;
      acc.clip_frac_high += st.clip_frac_high * w;
      acc.ratio_mean += st.ratio_mean * w;
      acc.is_weight_mean += st.is_weight_mean * w;
      acc.is_truncated_frac += st.is_truncated_frac * w;
      // -log pi of the sampled tokens: a one-sample estimate of the policy's entropy.
      entropy_sum +=
          -(in.logp.detach() * mb.loss_mask).sum().item<double>() / tokens / options.updates;
    }
    if (comm != nullptr) ALLOT_RETURN_IF_ERROR(comm->SumGradients(params));
    fwd_bwd += Seconds(tu);
    const auto to = Clock::now();
    // trainer/optim's global clipping (float64, fixed order); 0 = report the norm only.
    grad_norm = ClipGradNorm(params, options.max_grad_norm);
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(options.lr);
    }
    StepAdamW(optimizer);  // multi-tensor: a few kernels for all LoRA tensors on a GPU
    opt_s += Seconds(to);
  }
  if (comm != nullptr) {
    // Every term above is this rank's share of a union-batch quantity: the sums are the union's.
    std::vector<double> v = {loss_sum,           acc.policy_loss,       acc.kl,
                             acc.clip_frac_low,  acc.clip_frac_high,    acc.ratio_mean,
                             acc.is_weight_mean, acc.is_truncated_frac, entropy_sum,
                             rollout_diff_sum};
    ALLOT_RETURN_IF_ERROR(comm->AllReduceScalars(v, /*mean=*/false));
    loss_sum = v[0];
    acc.policy_loss = v[1];
    acc.kl = v[2];
    acc.clip_frac_low = v[3];
    acc.clip_frac_high = v[4];
    acc.ratio_mean = v[5];
    acc.is_weight_mean = v[6];
    acc.is_truncated_frac = v[7];
    entropy_sum = v[8];
    rollout_diff_sum = v[9];
  }
  m->rollout_logprob_abs_diff = has_rollout_logp ? rollout_diff_sum / tokens : -1.0;
  m->loss = loss_sum;
  m->policy_loss = acc.policy_loss;
  m->kl = acc.kl;
  m->clip_frac_low = acc.clip_frac_low;
  m->clip_frac_high = acc.clip_frac_high;
  m->ratio_mean = acc.ratio_mean;
  m->is_weight_mean = use_tis ? acc.is_weight_mean : 1.0;
  m->is_truncated_frac = acc.is_truncated_frac;
  m->entropy = entropy_sum;
  m->grad_norm = grad_norm;
  m->trained_tokens = totals.tokens * options.updates;
  m->fwd_bwd_s = fwd_bwd;
  m->optimizer_s = opt_s;
  return Status::Ok();
}

}  // namespace allot::trainer::grpo
