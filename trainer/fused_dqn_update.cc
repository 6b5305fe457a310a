#include "trainer/fused_dqn_update.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace allot::trainer {

struct FusedDqnUpdate::Activations {
  int batch = 0;
  std::vector<float> x, z1, h, za, ha, adv, zv, hv, v, q;
  void Resize(int b, const DuelingShape& s) {
    batch = b;
    const size_t B = static_cast<size_t>(b);
    x.resize(B * s.state_dim);
    z1.resize(B * s.hidden);
    h.resize(B * s.hidden);
    za.resize(B * s.hidden);
    ha.resize(B * s.hidden);
    adv.resize(B * s.num_actions);
    zv.resize(B * s.hidden);
    hv.resize(B * s.hidden);
    v.resize(B);
    q.resize(B * s.num_actions);
  }
};

namespace {

// y[b, :] = bias + x[b, :] W^T with W [out, in]. `wt` is scratch for W^T ([in, out]) so that
// the inner loop runs over contiguous outputs (vectorisable without reassociating sums).
void Dense(const float* w, const float* bias, const float* x, int batch, int in, int out, float* y,
           std::vector<float>& wt) {
  wt.resize(static_cast<size_t>(in) * out);
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i)
      wt[static_cast<size_t>(i) * out + o] = w[static_cast<size_t>(o) * in + i];
  }
  for (int b = 0; b < batch; ++b) {
    float* yr = y + static_cast<size_t>(b) * out;
    const float* xr = x + static_cast<size_t>(b) * in;
    std::memcpy(yr, bias, sizeof(float) * out);
    for (int i = 0; i < in; ++i) {
      const float xi = xr[i];
      const float* wr = wt.data() + static_cast<size_t>(i) * out;
      for (int o = 0; o < out; ++o) yr[o] += xi * wr[o];
    }
  }
}

void Relu(const float* z, float* h, size_t n) {
  for (size_t i = 0; i < n; ++i) h[i] = z[i] > 0.0f ? z[i] : 0.0f;
}

// Backward of y = x W^T + b: dW += dy^T x, db += sum_b dy, and dx = dy W (when dx != null).
void DenseBackward(const float* w, const float* x, const float* dy, int batch, int in, int out,
                   float* dw, float* db, float* dx) {
  for (int b = 0; b < batch; ++b) {
    const float* dyr = dy + static_cast<size_t>(b) * out;
    const float* xr = x + static_cast<size_t>(b) * in;
    for (int o = 0; o < out; ++o) {
      const float g = dyr[o];
      db[o] += g;
      float* dwr = dw + static_cast<size_t>(o) * in;
      for (int i = 0; i < in; ++i) dwr[i] += g * xr[i];
    }
    if (dx != nullptr) {
      float* dxr = dx + static_cast<size_t>(b) * in;
      std::fill(dxr, dxr + in, 0.0f);
      for (int o = 0; o < out; ++o) {
        const float g = dyr[o];
        const float* wr = w + static_cast<size_t>(o) * in;
        for (int i = 0; i < in; ++i) dxr[i] += g * wr[i];
      }
    }
  }
}

}  // namespace

FusedDqnUpdate::FusedDqnUpdate(DuelingShape s)
    : shape_(s),
      cur_(std::make_unique<Activations>()),
      next_online_(std::make_unique<Activations>()),
      next_target_(std::make_unique<Activations>()) {
  const int S = s.state_dim, H = s.hidden, A = s.num_actions;
  sizes_ = {H * S, H, H * H, H, A * H, A, H * H, H, H, 1};
}

FusedDqnUpdate::~FusedDqnUpdate() = default;

void FusedDqnUpdate::ForwardInto(const ConstDuelingParams& p, const float* states, int batch,
                                 Activations& a) {
  const int S = shape_.state_dim, H = shape_.hidden, A = shape_.num_actions;
  a.Resize(batch, shape_);
  const size_t BH = static_cast<size_t>(batch) * H;
  for (size_t i = 0; i < static_cast<size_t>(batch) * S; ++i) {
    a.x[i] = (states[i] - shape_.input_offset) / shape_.input_scale;
  }
  Dense(p[0], p[1], a.x.data(), batch, S, H, a.z1.data(), wt_);
  Relu(a.z1.data(), a.h.data(), BH);
  Dense(p[2], p[3], a.h.data(), batch, H, H, a.za.data(), wt_);
  Relu(a.za.data(), a.ha.data(), BH);
  Dense(p[4], p[5], a.ha.data(), batch, H, A, a.adv.data(), wt_);
  Dense(p[6], p[7], a.h.data(), batch, H, H, a.zv.data(), wt_);
  Relu(a.zv.data(), a.hv.data(), BH);
  Dense(p[8], p[9], a.hv.data(), batch, H, 1, a.v.data(), wt_);
  // Q = V + A - mean(A) (Wang et al., 2016).
  for (int b = 0; b < batch; ++b) {
    const float* ar = a.adv.data() + static_cast<size_t>(b) * A;
    float mean = 0;
    for (int j = 0; j < A; ++j) mean += ar[j];
    mean /= static_cast<float>(A);
    float* qr = a.q.data() + static_cast<size_t>(b) * A;
    for (int j = 0; j < A; ++j) qr[j] = a.v[static_cast<size_t>(b)] + (ar[j] - mean);
  }
}

void FusedDqnUpdate::Forward(const ConstDuelingParams& p, const float* states, int batch,
                             float* q) {
  Activations a;
  ForwardInto(p, states, batch, a);
  std::memcpy(q, a.q.data(), sizeof(float) * a.q.size());
}

void FusedDqnUpdate::Targets(const ConstDuelingParams& online, const ConstDuelingParams& target,
                             const FusedBatch& b, bool double_q, float* y) {
  const int A = shape_.num_actions;
  Activations& on = *next_online_;
  Activations& tg = *next_target_;
  ForwardInto(target, b.next_states, b.size, tg);
  if (double_q) ForwardInto(online, b.next_states, b.size, on);
  for (int i = 0; i < b.size; ++i) {
    const float* tq = tg.q.data() + static_cast<size_t>(i) * A;
    float next;
    if (double_q) {
      // Double DQN: the online net selects, the target net evaluates (van Hasselt et al., 2016).
      const float* oq = on.q.data() + static_cast<size_t>(i) * A;
      next = tq[std::max_element(oq, oq + A) - oq];
    } else {
      next = *std::max_element(tq, tq + A);
    }
    y[i] = b.rewards[i] + b.discounts[i] * (1 - b.dones[i]) * next;
  }
}

FusedStats FusedDqnUpdate::LossAndGrad(const ConstDuelingParams& p, const FusedBatch& b,
                                       const float* y, bool huber, const DuelingParams& g,
                                       float* td) {
  const int S = shape_.state_dim, H = shape_.hidden, A = shape_.num_actions, B = b.size;
  Activations& a = *cur_;
  ForwardInto(p, b.states, B, a);
  for (size_t k = 0; k < g.size(); ++k) std::fill(g[k], g[k] + sizes_[k], 0.0f);

  // dL/dq_b for L = mean_b w_b l(q_b - y_b).
  std::vector<float>& dq = scratch_;
  dq.assign(static_cast<size_t>(B), 0.0f);
  FusedStats st;
  for (int i = 0; i < B; ++i) {
    const float q = a.q[static_cast<size_t>(i) * A + static_cast<size_t>(b.actions[i])];
    const float d = q - y[i];
    td[i] = y[i] - q;
    float l, dl;
    if (huber) {
      const float ad = std::fabs(d);
      l = ad < 1.0f ? 0.5f * d * d : ad - 0.5f;
      dl = ad < 1.0f ? d : (d > 0 ? 1.0f : -1.0f);
    } else {
      l = d * d;
      dl = 2.0f * d;
    }
    st.loss += static_cast<double>(b.weights[i] * l);
    st.q_mean += q;
    st.td_abs_mean += std::fabs(d);
    dq[static_cast<size_t>(i)] = b.weights[i] * dl / static_cast<float>(B);
  }
  st.loss /= B;
  st.q_mean /= B;
  st.td_abs_mean /= B;

  // Through Q = V + A - mean(A): dV = dq, dA_j = dq (1[j = a] - 1/|A|).
  std::vector<float> dadv(static_cast<size_t>(B) * A), dv(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) {
    const float gq = dq[static_cast<size_t>(i)];
    dv[static_cast<size_t>(i)] = gq;
    for (int j = 0; j < A; ++j) {
      dadv[static_cast<size_t>(i) * A + j] =
          gq * ((j == b.actions[i] ? 1.0f : 0.0f) - 1.0f / static_cast<float>(A));
    }
  }
  const size_t BH = static_cast<size_t>(B) * H;
  std::vector<float> dha(BH), dhv(BH), dh_a(BH), dh_v(BH);
  DenseBackward(p[4], a.ha.data(), dadv.data(), B, H, A, g[4], g[5], dha.data());
  for (size_t k = 0; k < BH; ++k) dha[k] = a.za[k] > 0 ? dha[k] : 0.0f;
  DenseBackward(p[2], a.h.data(), dha.data(), B, H, H, g[2], g[3], dh_a.data());
  DenseBackward(p[8], a.hv.data(), dv.data(), B, H, 1, g[8], g[9], dhv.data());
  for (size_t k = 0; k < BH; ++k) dhv[k] = a.zv[k] > 0 ? dhv[k] : 0.0f;
  DenseBackward(p[6], a.h.data(), dhv.data(), B, H, H, g[6], g[7], dh_v.data());
  for (size_t k = 0; k < BH; ++k) dh_a[k] = a.z1[k] > 0 ? dh_a[k] + dh_v[k] : 0.0f;
  DenseBackward(p[0], a.x.data(), dh_a.data(), B, S, H, g[0], g[1], nullptr);
  return st;
}

void FusedDqnUpdate::AdamStep(const DuelingParams& params, const ConstDuelingParams& grads,
                              const DuelingParams& m, const DuelingParams& v, int64_t step,
                              const AdamHyper& hp) {
  // torch::optim::Adam (Kingma & Ba, 2015) as LibTorch computes it.
  const double t = static_cast<double>(step + 1);
  const double bc1 = 1 - std::pow(hp.beta1, t);
  const double bc2 = 1 - std::pow(hp.beta2, t);
  const float b1 = static_cast<float>(hp.beta1), b2 = static_cast<float>(hp.beta2);
  const float one_b1 = static_cast<float>(1 - hp.beta1), one_b2 = static_cast<float>(1 - hp.beta2);
  const float sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  const float eps = static_cast<float>(hp.eps);
  const float step_size = static_cast<float>(hp.lr / bc1);
  for (size_t k = 0; k < params.size(); ++k) {
    float* p = params[k];
    const float* g = grads[k];
    float* mk = m[k];
    float* vk = v[k];
    for (int i = 0; i < sizes_[k]; ++i) {
      mk[i] = mk[i] * b1 + one_b1 * g[i];
      vk[i] = vk[i] * b2 + one_b2 * g[i] * g[i];
      const float denom = std::sqrt(vk[i]) / sqrt_bc2 + eps;
      p[i] -= step_size * mk[i] / denom;
    }
  }
}

}  // namespace allot::trainer
