#include "trainer/dqn/fused_dqn_update.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define ALLOT_FUSED_X86 1
#else
#define ALLOT_FUSED_X86 0
#endif

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

// ---- Generic path: any shape, scalar loops. ----

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

// ---- Fast path: hidden 32, vector kernels over packed weights. ----

constexpr int kFastHidden = 32;
constexpr int kOut = 8;  // output heads packed: advantages in 0..A-1, the value at A, zeros

size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Views into 64-byte aligned buffers.
struct PackedNet {
  float* w1t;   // [S, H]   trunk, transposed
  float* b1;    // [H]
  float* w23t;  // [H, 2H]  advantage hidden | value hidden, transposed
  float* b23;   // [2H]
  float* w23;   // [2H, H]  the same, parameter layout (backward)
  float* wot;   // [2H, 8]  advantage out | value out, transposed, block-diagonal
  float* bo;    // [8]
  float* wa;    // [A, H]   advantage out, parameter layout (backward)
  float* wv;    // [H]      value out (backward)
};

struct FastActs {
  float* x;    // [rows, S] scaled input
  float* h1;   // [rows, H]
  float* h23;  // [rows, 2H]
  float* out;  // [rows, 8]
};

struct BackwardScratch {
  float* dout;  // [rows, 8]
  float* dh23;  // [rows, 2H]
  float* dh1;   // [rows, H]
  float* dw1t;  // [S, H]
  float* bsum;  // [2H]
};

// Zero-initialised, 64-byte aligned floats, carved into 64-byte aligned pieces.
class AlignedArena {
 public:
  void Reset(size_t floats) {
    const size_t bytes = RoundUp(std::max<size_t>(floats, 1) * sizeof(float), 64);
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    std::memset(data_.get(), 0, bytes);
    used_ = 0;
  }
  float* Take(size_t floats) {
    float* p = data_.get() + used_;
    used_ += RoundUp(floats, 16);
    return p;
  }
  static size_t Need(size_t floats) { return RoundUp(floats, 16); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t used_ = 0;
};

size_t PackedFloats(int S, int A, int H) {
  const size_t s = static_cast<size_t>(S), a = static_cast<size_t>(A), h = static_cast<size_t>(H);
  return AlignedArena::Need(s * h) + AlignedArena::Need(h) + 2 * AlignedArena::Need(2 * h * h) +
         AlignedArena::Need(2 * h) + AlignedArena::Need(2 * h * kOut) + AlignedArena::Need(kOut) +
         AlignedArena::Need(a * h) + AlignedArena::Need(h);
}

PackedNet TakePacked(AlignedArena& arena, int S, int A, int H) {
  const size_t s = static_cast<size_t>(S), a = static_cast<size_t>(A), h = static_cast<size_t>(H);
  PackedNet p;
  p.w1t = arena.Take(s * h);
  p.b1 = arena.Take(h);
  p.w23t = arena.Take(2 * h * h);
  p.b23 = arena.Take(2 * h);
  p.w23 = arena.Take(2 * h * h);
  p.wot = arena.Take(2 * h * kOut);
  p.bo = arena.Take(kOut);
  p.wa = arena.Take(a * h);
  p.wv = arena.Take(h);
  return p;
}

// Parameters (DuelingQNetImpl order) into the packed layout. Padding entries stay zero.
void Pack(const ConstDuelingParams& p, int S, int A, int H, const PackedNet& d) {
  for (int o = 0; o < H; ++o) {
    for (int i = 0; i < S; ++i) d.w1t[i * H + o] = p[0][o * S + i];
  }
  std::memcpy(d.b1, p[1], sizeof(float) * static_cast<size_t>(H));
  for (int o = 0; o < H; ++o) {
    for (int i = 0; i < H; ++i) {
      d.w23t[i * 2 * H + o] = p[2][o * H + i];
      d.w23t[i * 2 * H + H + o] = p[6][o * H + i];
    }
  }
  std::memcpy(d.b23, p[3], sizeof(float) * static_cast<size_t>(H));
  std::memcpy(d.b23 + H, p[7], sizeof(float) * static_cast<size_t>(H));
  std::memcpy(d.w23, p[2], sizeof(float) * static_cast<size_t>(H * H));
  std::memcpy(d.w23 + H * H, p[6], sizeof(float) * static_cast<size_t>(H * H));
  for (int j = 0; j < A; ++j) {
    for (int i = 0; i < H; ++i) d.wot[i * kOut + j] = p[4][j * H + i];
  }
  for (int i = 0; i < H; ++i) d.wot[(H + i) * kOut + A] = p[8][i];
  std::memcpy(d.bo, p[5], sizeof(float) * static_cast<size_t>(A));
  d.bo[A] = p[9][0];
  std::memcpy(d.wa, p[4], sizeof(float) * static_cast<size_t>(A * H));
  std::memcpy(d.wv, p[8], sizeof(float) * static_cast<size_t>(H));
}

// Q = V + A - mean(A) (Wang et al., 2016) from one packed output row.
inline float QOf(const float* out, int A, int j) {
  float mean = 0;
  for (int k = 0; k < A; ++k) mean += out[k];
  mean /= static_cast<float>(A);
  return out[A] + (out[j] - mean);
}

inline void QRow(const float* out, int A, float* q) {
  float mean = 0;
  for (int k = 0; k < A; ++k) mean += out[k];
  mean /= static_cast<float>(A);
  for (int j = 0; j < A; ++j) q[j] = out[A] + (out[j] - mean);
}

struct FastOps {
  const char* name;
  void (*forward)(const PackedNet&, int, const FastActs&, int);
  void (*backward)(const PackedNet&, int, int, const FastActs&, int, const BackwardScratch&,
                   const DuelingParams&);
  void (*adam)(float*, const float*, float*, float*, int, float, float, float, float, float, float,
               float);
};

namespace portable {
using V = float __attribute__((vector_size(16)));
constexpr int kLanes = 4;
inline V Splat(float x) {
#if ALLOT_FUSED_X86
  return _mm_set1_ps(x);
#else
  V v;
  for (int l = 0; l < kLanes; ++l) v[l] = x;
  return v;
#endif
}
inline V MulAdd(V a, V b, V c) { return a * b + c; }
inline V Sqrt(V a) {
#if ALLOT_FUSED_X86
  return _mm_sqrt_ps(a);
#else
  V r;
  for (int l = 0; l < kLanes; ++l) r[l] = std::sqrt(a[l]);
  return r;
#endif
}
#include "trainer/dqn/fused_dqn_update.inc"
constexpr FastOps kOps{"sse2", &NetForward<kFastHidden>, &NetBackward<kFastHidden>, &AdamArray};
}  // namespace portable

#if ALLOT_FUSED_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using V = float __attribute__((vector_size(32)));
constexpr int kLanes = 8;
inline V Splat(float x) { return _mm256_set1_ps(x); }
inline V MulAdd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V Sqrt(V a) { return _mm256_sqrt_ps(a); }
#include "trainer/dqn/fused_dqn_update.inc"
constexpr FastOps kOps{"avx2", &NetForward<kFastHidden>, &NetBackward<kFastHidden>, &AdamArray};
}  // namespace avx2
#pragma GCC pop_options
#endif

}  // namespace

struct FusedDqnUpdate::Fast {
  const FastOps* ops = nullptr;
  AlignedArena weights;
  PackedNet online{}, target{};
  AlignedArena acts;
  int rows = 0;
  FastActs cur{}, next{};
  BackwardScratch bw{};
  std::vector<std::vector<float>> target_raw;  // the target parameters `target` was packed from
  std::vector<float> target_q;                 // [B, A]
  std::vector<float> q_row;

  // Activation buffers for `rows` (a multiple of 8) samples.
  void Reserve(int new_rows, int S, int H) {
    new_rows = std::max(new_rows, 8);  // an empty batch still gets (unused) buffers
    if (new_rows <= rows) return;
    rows = new_rows;
    const size_t r = static_cast<size_t>(rows), s = static_cast<size_t>(S),
                 h = static_cast<size_t>(H);
    const size_t act = AlignedArena::Need(r * s) + AlignedArena::Need(r * h) +
                       AlignedArena::Need(r * 2 * h) + AlignedArena::Need(r * kOut);
    acts.Reset(2 * act + AlignedArena::Need(r * kOut) + AlignedArena::Need(r * 2 * h) +
               AlignedArena::Need(r * h) + AlignedArena::Need(s * h) + AlignedArena::Need(2 * h));
    for (FastActs* a : {&cur, &next}) {
      a->x = acts.Take(r * s);
      a->h1 = acts.Take(r * h);
      a->h23 = acts.Take(r * 2 * h);
      a->out = acts.Take(r * kOut);
    }
    bw.dout = acts.Take(r * kOut);
    bw.dh23 = acts.Take(r * 2 * h);
    bw.dh1 = acts.Take(r * h);
    bw.dw1t = acts.Take(s * h);
    bw.bsum = acts.Take(2 * h);
  }
};

namespace {

int PaddedRows(int batch) { return (batch + 7) / 8 * 8; }

// (s - offset) / scale into x ([rows, S]); the padding rows are zero.
void ScaleInput(const DuelingShape& sh, const float* states, int batch, int rows, float* x) {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(sh.state_dim);
  for (size_t i = 0; i < n; ++i) x[i] = (states[i] - sh.input_offset) / sh.input_scale;
  std::fill(x + n, x + static_cast<size_t>(rows) * static_cast<size_t>(sh.state_dim), 0.0f);
}

const FastOps* SelectOps(FusedIsa isa) {
#if ALLOT_FUSED_X86
  if (isa != FusedIsa::kPortable && FusedDqnUpdate::Avx2Supported()) return &avx2::kOps;
#endif
  (void)isa;
  return &portable::kOps;
}

}  // namespace

bool FusedDqnUpdate::Avx2Supported() {
#if ALLOT_FUSED_X86
  static const bool supported = [] {
    __builtin_cpu_init();  // in case this runs before main (static initialisers)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported;
#else
  return false;
#endif
}

FusedDqnUpdate::FusedDqnUpdate(DuelingShape s, FusedIsa isa)
    : shape_(s),
      cur_(std::make_unique<Activations>()),
      next_online_(std::make_unique<Activations>()),
      next_target_(std::make_unique<Activations>()) {
  const int S = s.state_dim, H = s.hidden, A = s.num_actions;
  sizes_ = {H * S, H, H * H, H, A * H, A, H * H, H, H, 1};
  if (H == kFastHidden && A >= 1 && A + 1 <= kOut && S >= 1) {
    fast_ = std::make_unique<Fast>();
    fast_->ops = SelectOps(isa);
    fast_->weights.Reset(2 * PackedFloats(S, A, H));
    fast_->online = TakePacked(fast_->weights, S, A, H);
    fast_->target = TakePacked(fast_->weights, S, A, H);
  }
}

FusedDqnUpdate::~FusedDqnUpdate() = default;

const char* FusedDqnUpdate::kernel() const { return fast_ ? fast_->ops->name : "generic"; }

void FusedDqnUpdate::PackOnline(const ConstDuelingParams& online) {
  Pack(online, shape_.state_dim, shape_.num_actions, shape_.hidden, fast_->online);
}

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
  if (fast_) {
    const int A = shape_.num_actions, rows = PaddedRows(batch);
    PackOnline(p);
    fast_->Reserve(rows, shape_.state_dim, shape_.hidden);
    ScaleInput(shape_, states, batch, rows, fast_->next.x);
    fast_->ops->forward(fast_->online, shape_.state_dim, fast_->next, rows);
    for (int b = 0; b < batch; ++b) QRow(fast_->next.out + b * kOut, A, q + b * A);
    return;
  }
  Activations a;
  ForwardInto(p, states, batch, a);
  std::memcpy(q, a.q.data(), sizeof(float) * a.q.size());
}

void FusedDqnUpdate::Targets(const ConstDuelingParams& online, const ConstDuelingParams& target,
                             const FusedBatch& b, bool double_q, float* y) {
  if (fast_) {
    PackOnline(online);
    TargetsFast(target, b, double_q, y);
  } else {
    TargetsGeneric(online, target, b, double_q, y);
  }
}

void FusedDqnUpdate::TargetsFast(const ConstDuelingParams& target, const FusedBatch& b,
                                 bool double_q, float* y) {
  const int A = shape_.num_actions, B = b.size, rows = PaddedRows(B);
  Fast& f = *fast_;
  f.Reserve(rows, shape_.state_dim, shape_.hidden);
  // The target net changes only at a sync (every 50 updates in RLoT): repack only when its
  // bytes differ from those last packed (a compare costs far less than the transposes).
  bool same = f.target_raw.size() == 10;
  for (size_t k = 0; same && k < 10; ++k) {
    same =
        std::memcmp(f.target_raw[k].data(), target[k], sizeof(float) * f.target_raw[k].size()) == 0;
  }
  if (!same) {
    Pack(target, shape_.state_dim, A, shape_.hidden, f.target);
    f.target_raw.resize(10);
    for (size_t k = 0; k < 10; ++k) f.target_raw[k].assign(target[k], target[k] + sizes_[k]);
  }
  ScaleInput(shape_, b.next_states, B, rows, f.next.x);
  f.ops->forward(f.target, shape_.state_dim, f.next, rows);
  f.target_q.resize(static_cast<size_t>(B) * A);
  for (int i = 0; i < B; ++i) QRow(f.next.out + i * kOut, A, f.target_q.data() + i * A);
  if (double_q) f.ops->forward(f.online, shape_.state_dim, f.next, rows);
  f.q_row.resize(static_cast<size_t>(A));
  for (int i = 0; i < B; ++i) {
    const float* tq = f.target_q.data() + static_cast<size_t>(i) * A;
    float next;
    if (double_q) {
      // Double DQN: the online net selects, the target net evaluates (van Hasselt et al., 2016).
      QRow(f.next.out + i * kOut, A, f.q_row.data());
      next = tq[std::max_element(f.q_row.begin(), f.q_row.end()) - f.q_row.begin()];
    } else {
      next = *std::max_element(tq, tq + A);
    }
    y[i] = b.rewards[i] + b.discounts[i] * (1 - b.dones[i]) * next;
  }
}

void FusedDqnUpdate::TargetsGeneric(const ConstDuelingParams& online,
                                    const ConstDuelingParams& target, const FusedBatch& b,
                                    bool double_q, float* y) {
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

namespace {

// Per-sample loss l(q - y) (squared error, or Huber with delta 1 as smooth_l1_loss) and dl/dq.
inline void SampleLoss(float d, bool huber, float* l, float* dl) {
  if (huber) {
    const float ad = std::fabs(d);
    *l = ad < 1.0f ? 0.5f * d * d : ad - 0.5f;
    *dl = ad < 1.0f ? d : (d > 0 ? 1.0f : -1.0f);
  } else {
    *l = d * d;
    *dl = 2.0f * d;
  }
}

}  // namespace

FusedStats FusedDqnUpdate::LossAndGrad(const ConstDuelingParams& p, const FusedBatch& b,
                                       const float* y, bool huber, const DuelingParams& g,
                                       float* td) {
  if (!fast_) return LossAndGradGeneric(p, b, y, huber, g, td);
  PackOnline(p);
  return LossAndGradFast(b, y, huber, g, td);
}

FusedStats FusedDqnUpdate::LossAndGradFast(const FusedBatch& b, const float* y, bool huber,
                                           const DuelingParams& g, float* td) {
  const int A = shape_.num_actions, B = b.size, rows = PaddedRows(B);
  Fast& f = *fast_;
  f.Reserve(rows, shape_.state_dim, shape_.hidden);
  ScaleInput(shape_, b.states, B, rows, f.cur.x);
  f.ops->forward(f.online, shape_.state_dim, f.cur, rows);
  // dL/d[adv | v] for L = mean_b w_b l(q_b - y_b), through Q = V + A - mean(A): dV = dq,
  // dA_j = dq (1[j = a] - 1/|A|). Padding rows and columns are zero.
  std::fill(f.bw.dout, f.bw.dout + static_cast<size_t>(rows) * kOut, 0.0f);
  FusedStats st;
  for (int i = 0; i < B; ++i) {
    const int act = static_cast<int>(b.actions[i]);
    const float q = QOf(f.cur.out + i * kOut, A, act);
    const float d = q - y[i];
    td[i] = y[i] - q;
    float l, dl;
    SampleLoss(d, huber, &l, &dl);
    st.loss += static_cast<double>(b.weights[i] * l);
    st.q_mean += q;
    st.td_abs_mean += std::fabs(d);
    const float gq = b.weights[i] * dl / static_cast<float>(B);
    float* row = f.bw.dout + i * kOut;
    for (int j = 0; j < A; ++j) {
      row[j] = gq * ((j == act ? 1.0f : 0.0f) - 1.0f / static_cast<float>(A));
    }
    row[A] = gq;
  }
  st.loss /= B;
  st.q_mean /= B;
  st.td_abs_mean /= B;
  f.ops->backward(f.online, shape_.state_dim, A, f.cur, rows, f.bw, g);
  return st;
}

FusedStats FusedDqnUpdate::LossAndGradGeneric(const ConstDuelingParams& p, const FusedBatch& b,
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
    SampleLoss(d, huber, &l, &dl);
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
  const FastOps* ops = fast_ ? fast_->ops : &portable::kOps;
  for (size_t k = 0; k < params.size(); ++k) {
    ops->adam(params[k], grads[k], m[k], v[k], sizes_[k], b1, b2, one_b1, one_b2, sqrt_bc2, eps,
              step_size);
  }
}

FusedStats FusedDqnUpdate::Step(const DuelingParams& online, const ConstDuelingParams& target,
                                const FusedBatch& b, bool double_q, bool huber,
                                const DuelingParams& grads, const DuelingParams& exp_avg,
                                const DuelingParams& exp_avg_sq, int64_t step,
                                const AdamHyper& hyper, float* y, float* td) {
  ConstDuelingParams on{}, g{};
  for (size_t k = 0; k < on.size(); ++k) {
    on[k] = online[k];
    g[k] = grads[k];
  }
  FusedStats st;
  if (fast_) {
    PackOnline(on);
    TargetsFast(target, b, double_q, y);
    st = LossAndGradFast(b, y, huber, grads, td);
  } else {
    TargetsGeneric(on, target, b, double_q, y);
    st = LossAndGradGeneric(on, b, y, huber, grads, td);
  }
  AdamStep(online, g, exp_avg, exp_avg_sq, step, hyper);
  return st;
}

}  // namespace allot::trainer
