// ZeRO memory per rank: the bytes of AdamW state and of gradient each learner rank holds at the
// optimizer step, for trainer.zero_stage 0, 1 and 2 at world sizes 1, 2 and 4 (Gloo ranks on
// threads over loopback, a tiny Qwen2 trained full-parameter), next to the ideal 1/N of ZeRO
// (Rajbhandari et al., 2020, Sec. 5). Counted from the tensors themselves (nbytes), after one
// real step (backward, reduction, clipping, update, all-gather), not estimated.
//
//   allot_zero_memory_bench [--worlds 1,2,4] [--hidden 64] [--layers 2]
//
// Stage 2's gradient column is what a rank keeps once the gradients are reduce-scattered; the
// whole gradient still exists during backward (allot reduces after it, not from hooks).
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "models/causal_lm.h"
#include "models/hf_config.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/local_launcher.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/multi_tensor_adamw.h"
#include "trainer/optim/zero_adamw.h"

namespace allot::bench {
namespace {

struct Bytes {
  int64_t params = 0;
  int64_t state = 0;
  int64_t grads = 0;
};

models::TransformerConfig TinyConfig(int64_t hidden, int64_t layers) {
  models::TransformerConfig c;
  c.vocab_size = 259;
  c.hidden_size = hidden;
  c.intermediate_size = hidden * 3 / 2;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = hidden / 4;
  c.attention_bias = true;
  return c;
}

// One training step of `stage` on this rank; the bytes it holds at the optimizer step.
Bytes OneStep(const models::TransformerConfig& config, trainer::comm::Communicator& comm, int stage,
              std::mutex& init_mu) {
  std::shared_ptr<models::CausalLMImpl> model;
  {
    std::lock_guard<std::mutex> lock(init_mu);  // the ranks share the global generator
    torch::manual_seed(1);
    model = std::make_shared<models::CausalLMImpl>(config, torch::TensorOptions(torch::kFloat));
  }
  trainer::NamedParameters named;
  std::vector<at::Tensor> params;
  for (const auto& item : model->named_parameters(true)) {
    named.emplace_back(item.key(), item.value());
    params.push_back(item.value());
  }
  Bytes b;
  for (const at::Tensor& p : params) b.params += static_cast<int64_t>(p.nbytes());
  trainer::OptimConfig oc;
  oc.lr = 1e-3;
  // This rank's share of a batch: 2 sequences of 32 tokens.
  torch::manual_seed(100 + comm.rank());
  const at::Tensor ids = torch::randint(0, config.vocab_size, {2, 32}, torch::kLong);
  auto backward = [&] { model->forward(ids).pow(2).mean().backward(); };
  if (stage == 0) {
    auto opt = trainer::MakeAdamW(oc, named);
    if (!opt.ok()) throw std::runtime_error(opt.status().message());
    (*opt)->zero_grad();
    backward();
    if (Status s = comm.SumGradients(params); !s.ok()) throw std::runtime_error(s.message());
    trainer::ClipGradNorm(params, 1.0);
    trainer::StepAdamW(**opt);
    for (const at::Tensor& p : params) b.grads += static_cast<int64_t>(p.grad().nbytes());
    for (const auto& [key, state] : (*opt)->state()) {
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
      b.state += static_cast<int64_t>(s.exp_avg().nbytes() + s.exp_avg_sq().nbytes());
    }
    return b;
  }
  auto zero = trainer::ZeroAdamW::Create(oc, named, &comm, stage);
  if (!zero.ok()) throw std::runtime_error(zero.status().message());
  (*zero)->ZeroGrad();
  backward();
  if (Status s = (*zero)->ReduceGradients(); !s.ok()) throw std::runtime_error(s.message());
  if (auto n = (*zero)->ClipGradNorm(1.0); !n.ok()) throw std::runtime_error(n.status().message());
  b.grads = (*zero)->GradientBytes();
  if (Status s = (*zero)->Step(); !s.ok()) throw std::runtime_error(s.message());
  b.state = (*zero)->StateBytes();
  return b;
}

// Every rank's bytes for `stage` on `world` Gloo ranks.
std::vector<Bytes> Ranks(const models::TransformerConfig& config, int world, int stage) {
  std::vector<Bytes> out(world);
  std::vector<std::string> errors(world);
  std::mutex init_mu;
  if (world == 1) {
    auto single = trainer::comm::Communicator::Single();
    out[0] = OneStep(config, *single, stage, init_mu);
    return out;
  }
  auto port = trainer::comm::FreeTcpPort("127.0.0.1");
  if (!port.ok()) throw std::runtime_error(port.status().message());
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      trainer::comm::DistEnv env;
      env.rank = r;
      env.local_rank = r;
      env.world_size = world;
      env.master_port = *port;
      trainer::comm::CommOptions options;
      options.backend = "gloo";
      auto comm = trainer::comm::Communicator::Create(env, options);
      if (!comm.ok()) {
        errors[r] = comm.status().message();
        return;
      }
      try {
        out[r] = OneStep(config, **comm, stage, init_mu);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    if (!errors[r].empty())
      throw std::runtime_error("rank " + std::to_string(r) + ": " + errors[r]);
  }
  return out;
}

int Main(int argc, char** argv) {
  std::vector<int> worlds = {1, 2, 4};
  int64_t hidden = 64, layers = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--worlds") {
      worlds.clear();
      std::stringstream s(v);
      for (std::string w; std::getline(s, w, ',');) worlds.push_back(std::stoi(w));
    } else if (k == "--hidden") {
      hidden = std::stoll(v);
    } else if (k == "--layers") {
      layers = std::stoll(v);
    } else {
      std::fprintf(stderr, "usage: %s [--worlds 1,2,4] [--hidden H] [--layers L]\n", argv[0]);
      return 2;
    }
  }
  at::set_num_threads(1);
  const models::TransformerConfig config = TinyConfig(hidden, layers);
  const std::vector<Bytes> base = Ranks(config, 1, 0);
  std::printf("tiny Qwen2 (hidden %lld, %lld layers), float32: %lld parameter bytes per rank\n",
              static_cast<long long>(hidden), static_cast<long long>(layers),
              static_cast<long long>(base[0].params));
  std::printf(
      "| world | stage | AdamW state bytes/rank (max) | of stage 0 | ideal | "
      "gradient bytes/rank (max) | of stage 0 | ideal |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (int world : worlds) {
    for (int stage = 0; stage <= 2; ++stage) {
      if (world == 1 && stage > 0) continue;  // a world of one keeps everything (no-op shard)
      const std::vector<Bytes> ranks = Ranks(config, world, stage);
      Bytes most;
      for (const Bytes& b : ranks) {
        most.state = std::max(most.state, b.state);
        most.grads = std::max(most.grads, b.grads);
      }
      const double state_ratio = static_cast<double>(most.state) / base[0].state;
      const double grad_ratio = static_cast<double>(most.grads) / base[0].grads;
      const double state_ideal = stage >= 1 ? 1.0 / world : 1.0;
      const double grad_ideal = stage == 2 ? 1.0 / world : 1.0;
      std::printf("| %d | %d | %lld | %.4f | %.4f | %lld | %.4f | %.4f |\n", world, stage,
                  static_cast<long long>(most.state), state_ratio, state_ideal,
                  static_cast<long long>(most.grads), grad_ratio, grad_ideal);
    }
  }
  return 0;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) {
  try {
    return allot::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allot_zero_memory_bench: %s\n", e.what());
    return 1;
  }
}
