// DQN navigator benchmarks: Double-DQN updates per second at batch 64 (RLoT Table 21)
// on the fused path and the LibTorch autograd path, the fused kernels alone per instruction set,
// and single-state greedy action selection (NavigatorMlp). bench/trainer/run.sh compares them
// with PyTorch in the same run.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <random>

#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/fused_dqn_update.h"

namespace allot::trainer {
namespace {

SampledBatch RandomBatch(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> feat(0, 3), act(0, 4);
  std::uniform_real_distribution<float> u(0, 1);
  SampledBatch b;
  for (int i = 0; i < n * 7; ++i) {
    b.states.push_back(static_cast<float>(feat(rng)));
    b.next_states.push_back(static_cast<float>(feat(rng)));
  }
  for (int i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.actions.push_back(act(rng));
    b.rewards.push_back(u(rng));
    b.dones.push_back(u(rng) < 0.2f ? 1.0f : 0.0f);
    b.discounts.push_back(0.9f);
    b.weights.push_back(1.0f);
  }
  return b;
}

void Update(benchmark::State& state, bool fused) {
  at::set_num_threads(1);
  DqnConfig cfg;
  cfg.fused_update = fused;
  cfg.replay_capacity = 64;
  DqnLearner learner(cfg, 1);
  std::vector<SampledBatch> batches;
  for (int i = 0; i < 16; ++i)
    batches.push_back(RandomBatch(cfg.batch_size, static_cast<uint64_t>(i)));
  size_t k = 0;
  for (auto _ : state) {
    auto stats = learner.Update(batches[k++ % batches.size()]);
    benchmark::DoNotOptimize(stats);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_DqnUpdateFused(benchmark::State& state) { Update(state, true); }
void BM_DqnUpdateLibTorch(benchmark::State& state) { Update(state, false); }

// The fused kernels alone (FusedDqnUpdate::Step on plain arrays), per instruction set: what a
// CPU without AVX2 would get from the portable SSE2 build.
void KernelStep(benchmark::State& state, FusedIsa isa) {
  if (isa == FusedIsa::kAvx2 && !FusedDqnUpdate::Avx2Supported()) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  FusedDqnUpdate fused(DuelingShape{}, isa);
  std::vector<std::vector<float>> online, target, grads, m, v;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f);
  for (int size : fused.sizes()) {
    std::vector<float> w(static_cast<size_t>(size));
    for (auto& x : w) x = u(rng);
    online.push_back(w);
    target.push_back(w);
    grads.emplace_back(w.size());
    m.emplace_back(w.size());
    v.emplace_back(w.size());
  }
  auto ptrs = [](std::vector<std::vector<float>>& a) {
    DuelingParams p{};
    for (size_t k = 0; k < p.size(); ++k) p[k] = a[k].data();
    return p;
  };
  ConstDuelingParams tg{};
  for (size_t k = 0; k < tg.size(); ++k) tg[k] = target[k].data();
  std::vector<SampledBatch> batches;
  for (int i = 0; i < 16; ++i) batches.push_back(RandomBatch(64, static_cast<uint64_t>(i)));
  std::vector<float> y(64), td(64);
  int64_t step = 0;
  for (auto _ : state) {
    const SampledBatch& b = batches[static_cast<size_t>(step) % batches.size()];
    FusedBatch fb{64,
                  b.states.data(),
                  b.next_states.data(),
                  b.actions.data(),
                  b.rewards.data(),
                  b.dones.data(),
                  b.discounts.data(),
                  b.weights.data()};
    auto st = fused.Step(ptrs(online), tg, fb, true, false, ptrs(grads), ptrs(m), ptrs(v), step++,
                         AdamHyper{}, y.data(), td.data());
    benchmark::DoNotOptimize(st);
  }
  state.SetLabel(fused.kernel());
  state.SetItemsProcessed(state.iterations());
}

void BM_FusedKernelsAvx2(benchmark::State& state) { KernelStep(state, FusedIsa::kAvx2); }
void BM_FusedKernelsPortable(benchmark::State& state) { KernelStep(state, FusedIsa::kPortable); }

void BM_NavigatorGreedy(benchmark::State& state) {
  DqnLearner learner(DqnConfig{}, 1);
  auto b = RandomBatch(64, 5);
  size_t k = 0;
  for (auto _ : state) {
    const int a = learner.Greedy(std::span<const float>(b.states.data() + (k++ % 64) * 7, 7));
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_DqnUpdateFused)->MeasureProcessCPUTime()->MinTime(1.0);
BENCHMARK(BM_DqnUpdateLibTorch)->MeasureProcessCPUTime()->MinTime(1.0);
BENCHMARK(BM_FusedKernelsAvx2)->MeasureProcessCPUTime()->MinTime(0.5);
BENCHMARK(BM_FusedKernelsPortable)->MeasureProcessCPUTime()->MinTime(0.5);
BENCHMARK(BM_NavigatorGreedy)->MeasureProcessCPUTime()->MinTime(0.5);

}  // namespace
}  // namespace allot::trainer

BENCHMARK_MAIN();
