// FusedDqnUpdate: the Double-DQN update of the dueling navigator (RLoT Section 4.2) written out
// by hand: forward, backward and Adam in plain loops over float arrays, without LibTorch.
//
// For a 2,566-parameter MLP, autograd's per-op dispatch costs far more than the arithmetic; the
// fused path does the same maths (same parameter layout, PyTorch's Adam formulas) in one pass.
// DqnLearner runs it on the memory of its LibTorch parameters and Adam state, so checkpoints
// and exact resume are the same for both paths; tests/trainer check that the loss and the
// gradients agree with autograd to 1e-5.
//
// Thread-compatible: one object per learner (it keeps scratch buffers).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace allot::trainer {

struct DuelingShape {
  int state_dim = 7;
  int num_actions = 5;
  int hidden = 32;
  float input_offset = 1.5f;
  float input_scale = 1.5f;
};

// Pointers to the 10 parameters in DuelingQNetImpl::ParameterNames() order, row-major
// [out, in] weights as in torch.nn.Linear.
using DuelingParams = std::array<float*, 10>;
using ConstDuelingParams = std::array<const float*, 10>;

struct FusedBatch {
  int size = 0;
  const float* states = nullptr;       // [B, state_dim]
  const float* next_states = nullptr;  // [B, state_dim]
  const int64_t* actions = nullptr;
  const float* rewards = nullptr;
  const float* dones = nullptr;
  const float* discounts = nullptr;  // gamma^n
  const float* weights = nullptr;    // importance weights
};

struct AdamHyper {
  double lr = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

struct FusedStats {
  double loss = 0;
  double q_mean = 0;
  double td_abs_mean = 0;
};

class FusedDqnUpdate {
 public:
  explicit FusedDqnUpdate(DuelingShape shape);
  ~FusedDqnUpdate();
  FusedDqnUpdate(const FusedDqnUpdate&) = delete;
  FusedDqnUpdate& operator=(const FusedDqnUpdate&) = delete;

  // Q-values [B, num_actions] for B states.
  void Forward(const ConstDuelingParams& p, const float* states, int batch, float* q);

  // Double-DQN targets y = r + discount * (1 - done) * Q_target(s', argmax_a Q_online(s', a))
  // (plain DQN: max_a Q_target(s', a)).
  void Targets(const ConstDuelingParams& online, const ConstDuelingParams& target,
               const FusedBatch& b, bool double_q, float* y);

  // Weighted loss mean_b w_b l(q_b - y_b) (l: squared error, or Huber with delta 1) and its
  // gradients into `grads` (same layout as the parameters). `td` receives y - q.
  FusedStats LossAndGrad(const ConstDuelingParams& online, const FusedBatch& b, const float* y,
                         bool huber, const DuelingParams& grads, float* td);

  // One Adam step over all parameters (PyTorch's formulas, no weight decay). `step` is the
  // step count before this update; exp_avg / exp_avg_sq are updated in place.
  void AdamStep(const DuelingParams& params, const ConstDuelingParams& grads,
                const DuelingParams& exp_avg, const DuelingParams& exp_avg_sq, int64_t step,
                const AdamHyper& hyper);

  // Parameter sizes in order.
  const std::array<int, 10>& sizes() const { return sizes_; }

 private:
  struct Activations;
  void ForwardInto(const ConstDuelingParams& p, const float* states, int batch, Activations& a);

  DuelingShape shape_;
  std::array<int, 10> sizes_{};
  std::unique_ptr<Activations> cur_, next_online_, next_target_;
  std::vector<float> scratch_;
  std::vector<float> wt_;  // transposed weights, [in, out] per layer
};

}  // namespace allot::trainer
