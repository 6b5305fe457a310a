// FusedDqnUpdate: the Double-DQN update of the dueling navigator (RLoT Section 4.2) written out
// by hand: forward, backward and Adam over float arrays, without LibTorch.
//
// For a 2,566-parameter MLP, autograd's per-op dispatch costs far more than the arithmetic; the
// fused path does the same maths (same parameter layout, PyTorch's Adam formulas) in one pass.
// DqnLearner runs it on the memory of its LibTorch parameters and Adam state, so checkpoints
// and exact resume are the same for both paths; tests/trainer check that the loss and the
// gradients agree with autograd to 1e-5.
//
// Two implementations: for the default width (hidden 32, up to 7 actions) vector kernels on
// packed weights, with the two hidden heads run as one 32 -> 64 layer and the two output heads
// as one 64 -> 8 layer (fused_dqn_update.inc), built twice, for the SSE2 baseline and for
// AVX2+FMA, one picked at construction from what the CPU supports; any other shape runs plain
// scalar loops. Each gives the same bits run after run on the same machine (exact resume relies
// on it); the two ISAs differ from each other by float rounding only (FMA).
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

// Which kernels run: kAuto picks AVX2 where the CPU has AVX2 and FMA, else the portable ones.
enum class FusedIsa { kAuto, kPortable, kAvx2 };

class FusedDqnUpdate {
 public:
  // kAvx2 on a CPU without AVX2/FMA falls back to the portable kernels (see kernel()).
  explicit FusedDqnUpdate(DuelingShape shape, FusedIsa isa = FusedIsa::kAuto);
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

  // The whole update: Targets, LossAndGrad and AdamStep on `online` in one call, with the
  // online weights packed once. `y` and `td` receive b.size floats each.
  FusedStats Step(const DuelingParams& online, const ConstDuelingParams& target,
                  const FusedBatch& b, bool double_q, bool huber, const DuelingParams& grads,
                  const DuelingParams& exp_avg, const DuelingParams& exp_avg_sq, int64_t step,
                  const AdamHyper& hyper, float* y, float* td);

  // Parameter sizes in order.
  const std::array<int, 10>& sizes() const { return sizes_; }
  // The kernels in use: "avx2", "sse2" (vector fast path) or "generic" (other shapes).
  const char* kernel() const;
  // Whether this CPU runs the AVX2+FMA kernels.
  static bool Avx2Supported();

 private:
  struct Activations;
  struct Fast;
  void ForwardInto(const ConstDuelingParams& p, const float* states, int batch, Activations& a);
  void TargetsGeneric(const ConstDuelingParams& online, const ConstDuelingParams& target,
                      const FusedBatch& b, bool double_q, float* y);
  FusedStats LossAndGradGeneric(const ConstDuelingParams& online, const FusedBatch& b,
                                const float* y, bool huber, const DuelingParams& grads, float* td);
  // Fast path: online weights already packed by PackOnline().
  void PackOnline(const ConstDuelingParams& online);
  void TargetsFast(const ConstDuelingParams& target, const FusedBatch& b, bool double_q, float* y);
  FusedStats LossAndGradFast(const FusedBatch& b, const float* y, bool huber,
                             const DuelingParams& grads, float* td);

  DuelingShape shape_;
  std::array<int, 10> sizes_{};
  std::unique_ptr<Activations> cur_, next_online_, next_target_;
  std::vector<float> scratch_;
  std::vector<float> wt_;       // transposed weights, [in, out] per layer
  std::unique_ptr<Fast> fast_;  // null on the generic path
};

}  // namespace allot::trainer
