#include "trainer/dqn/dqn_learner.h"

#include <torch/torch.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"
#include "core/safetensors.h"
#include "models/dueling_qnet.h"
#include "trainer/dqn/fused_dqn_update.h"
#include "trainer/optim/optimizer_state_key.h"

namespace allot::trainer {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

models::DuelingQNetOptions NetOptions(const DqnConfig& c) {
  models::DuelingQNetOptions o;
  o.state_dim = c.state_dim;
  o.num_actions = c.num_actions;
  o.hidden = c.hidden;
  return o;
}

std::span<const std::byte> TensorBytes(const at::Tensor& t) {
  return {static_cast<const std::byte*>(t.data_ptr()), static_cast<size_t>(t.nbytes())};
}

std::string DoubleBits(double v) { return std::to_string(std::bit_cast<uint64_t>(v)); }
double BitsDouble(const std::string& s) { return std::bit_cast<double>(std::stoull(s)); }

}  // namespace

struct DqnLearner::Nets {
  models::DuelingQNet online{nullptr};
  models::DuelingQNet target{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
};

DqnLearner::DqnLearner(const DqnConfig& config, uint64_t seed)
    : config_(config),
      nets_(std::make_unique<Nets>()),
      replay_(config.replay_capacity, config.state_dim, config.prioritized_replay,
              config.priority_alpha, config.priority_eps),
      rng_(seed),
      epsilon_(config.epsilon_start) {
  torch::manual_seed(seed);
  nets_->online = models::DuelingQNet(NetOptions(config));
  nets_->target = models::DuelingQNet(NetOptions(config));
  SyncTarget();
  nets_->optimizer = std::make_unique<torch::optim::Adam>(nets_->online->parameters(),
                                                          torch::optim::AdamOptions(config.lr));
  const FusedIsa isa = config.fused_kernels == "portable" ? FusedIsa::kPortable : FusedIsa::kAuto;
  fused_ = std::make_unique<FusedDqnUpdate>(
      DuelingShape{config.state_dim, config.num_actions, config.hidden, 1.5f, 1.5f}, isa);
  for (int size : fused_->sizes()) grads_.emplace_back(static_cast<size_t>(size));
  RefreshActor();
}

DqnLearner::~DqnLearner() = default;

void DqnLearner::SyncTarget() {
  torch::NoGradGuard no_grad;
  auto src = nets_->online->parameters();
  auto dst = nets_->target->parameters();
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

Result<std::string> DqnLearner::OnlineWeights() const {
  std::vector<safetensors::TensorRef> refs;
  std::vector<at::Tensor> keep;
  for (const auto& p : nets_->online->named_parameters()) {
    at::Tensor t = p.value().detach().contiguous();
    keep.push_back(t);
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    refs.push_back({p.key(), safetensors::Dtype::kF32, shape, TensorBytes(t)});
  }
  return safetensors::Serialize(refs, {{"format", "allot-navigator/1"},
                                       {"input_offset", "1.5"},
                                       {"input_scale", "1.5"},
                                       {"updates", std::to_string(updates_)}});
}

const models::NavigatorMlp& DqnLearner::actor() const {
  if (actor_stale_) RefreshActor();
  return actor_;
}

void DqnLearner::RefreshActor() const {
  actor_stale_ = false;
  std::array<const float*, 10> p{};
  auto params = nets_->online->parameters();
  for (size_t k = 0; k < p.size(); ++k) p[k] = params[k].data_ptr<float>();
  models::NavigatorMlp::Shape shape;
  shape.state_dim = config_.state_dim;
  shape.num_actions = config_.num_actions;
  shape.hidden = config_.hidden;
  actor_ = models::NavigatorMlp::FromArrays(shape, p);
}

int DqnLearner::Act(std::span<const float> state) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int action;
  if (u(rng_) < epsilon_) {
    std::uniform_int_distribution<int> pick(0, config_.num_actions - 1);
    action = pick(rng_);
  } else {
    action = actor().Greedy(state);
  }
  AdvanceEpsilon(1);
  return action;
}

void DqnLearner::AdvanceEpsilon(int64_t steps) {
  // RLoT: epsilon x0.9995 per env step, down to the floor.
  for (int64_t i = 0; i < steps; ++i) {
    epsilon_ = std::max(config_.epsilon_min, epsilon_ * config_.epsilon_decay);
  }
  env_steps_ += steps;
}

Status DqnLearner::PushToReplay(const Transition& t) { return replay_.Add(t); }

Status DqnLearner::Observe(const Transition& t) {
  if (t.action < 0 || t.action >= config_.num_actions) {
    return InvalidArgument("transition: action " + std::to_string(t.action) + " outside [0, " +
                           std::to_string(config_.num_actions) + ")");
  }
  if (config_.n_step <= 1) {
    Transition one = t;
    one.discount = static_cast<float>(config_.gamma);
    return PushToReplay(one);
  }
  // n-step returns: R = sum_k gamma^k r_k, bootstrapping from the n-th next state.
  pending_.push_back(t);
  auto emit = [&]() -> Status {
    Transition agg = pending_.front();
    float ret = 0, disc = 1;
    for (const auto& p : pending_) {
      ret += disc * p.reward;
      disc *= static_cast<float>(config_.gamma);
      agg.next_state = p.next_state;
      agg.done = p.done;
    }
    agg.reward = ret;
    agg.discount = disc;
    pending_.pop_front();
    return PushToReplay(agg);
  };
  if (pending_.size() >= static_cast<size_t>(config_.n_step)) ALLOT_RETURN_IF_ERROR(emit());
  if (t.done) {
    while (!pending_.empty()) ALLOT_RETURN_IF_ERROR(emit());
  }
  return Status::Ok();
}

std::optional<UpdateStats> DqnLearner::MaybeUpdate() {
  if (replay_.size() <
      static_cast<size_t>(std::min(config_.learn_start, config_.replay_capacity))) {
    return std::nullopt;
  }
  std::optional<UpdateStats> last;
  for (int i = 0; i < config_.updates_per_step; ++i) {
    SampledBatch batch = replay_.Sample(config_.batch_size, rng_, config_.priority_beta);
    last = Update(batch);
  }
  return last;
}

std::vector<float> DqnLearner::Targets(const SampledBatch& b) const {
  torch::NoGradGuard no_grad;
  const int64_t n = static_cast<int64_t>(b.actions.size());
  auto next = torch::from_blob(const_cast<float*>(b.next_states.data()), {n, config_.state_dim});
  auto r = torch::from_blob(const_cast<float*>(b.rewards.data()), {n});
  auto d = torch::from_blob(const_cast<float*>(b.dones.data()), {n});
  auto disc = torch::from_blob(const_cast<float*>(b.discounts.data()), {n});
  at::Tensor next_q;
  auto target_q = nets_->target->forward(next);
  if (config_.double_q) {
    // Double DQN: the online net selects the action, the target net evaluates it.
    auto best = nets_->online->forward(next).argmax(1, /*keepdim=*/true);
    next_q = target_q.gather(1, best).squeeze(1);
  } else {
    next_q = std::get<0>(target_q.max(1));
  }
  auto y = (r + disc * (1 - d) * next_q).contiguous();
  return std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + n);
}

struct DqnLearner::FusedView {
  DuelingParams online{}, exp_avg{}, exp_avg_sq{}, grads{};
  ConstDuelingParams target{};
  std::array<torch::optim::AdamParamState*, 10> adam{};
};

const DqnLearner::FusedView& DqnLearner::Fused() {
  if (fused_view_ != nullptr) return *fused_view_;
  auto view = std::make_unique<FusedView>();
  auto online = nets_->online->parameters();
  auto target = nets_->target->parameters();
  auto& state = nets_->optimizer->state();
  for (size_t k = 0; k < view->online.size(); ++k) {
    view->online[k] = online[k].data_ptr<float>();
    view->target[k] = target[k].data_ptr<float>();
    view->grads[k] = grads_[k].data();
    // Adam's state lives in the LibTorch optimizer, so that save/load and the autograd path
    // see exactly what the fused path wrote.
    const OptimizerStateKey key = StateKey(online[k]);
    auto it = state.find(key);
    if (it == state.end()) {
      auto fresh = std::make_unique<torch::optim::AdamParamState>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(online[k], at::MemoryFormat::Contiguous));
      fresh->exp_avg_sq(torch::zeros_like(online[k], at::MemoryFormat::Contiguous));
      it = state.emplace(key, std::move(fresh)).first;
    }
    auto& adam = static_cast<torch::optim::AdamParamState&>(*it->second);
    view->adam[k] = &adam;
    view->exp_avg[k] = adam.exp_avg().data_ptr<float>();
    view->exp_avg_sq[k] = adam.exp_avg_sq().data_ptr<float>();
  }
  fused_view_ = std::move(view);
  return *fused_view_;
}

UpdateStats DqnLearner::FusedUpdate(const SampledBatch& b) {
  const FusedView& v = Fused();
  const int n = static_cast<int>(b.actions.size());
  FusedBatch fb{n,
                b.states.data(),
                b.next_states.data(),
                b.actions.data(),
                b.rewards.data(),
                b.dones.data(),
                b.discounts.data(),
                b.weights.data()};
  fused_y_.resize(static_cast<size_t>(n));
  fused_td_.resize(static_cast<size_t>(n));
  const auto& opts =
      static_cast<const torch::optim::AdamOptions&>(nets_->optimizer->param_groups()[0].options());
  AdamHyper hyper{opts.lr(), std::get<0>(opts.betas()), std::get<1>(opts.betas()), opts.eps()};
  const int64_t step = v.adam[0]->step();
  FusedStats fs =
      fused_->Step(v.online, v.target, fb, config_.double_q, config_.loss == "huber", v.grads,
                   v.exp_avg, v.exp_avg_sq, step, hyper, fused_y_.data(), fused_td_.data());
  for (auto* adam : v.adam) adam->step(step + 1);

  ++updates_;
  if (updates_ % config_.target_update_every == 0) SyncTarget();
  actor_stale_ = true;
  replay_.UpdatePriorities(b.indices, fused_td_);
  return UpdateStats{fs.loss, fs.q_mean, fs.td_abs_mean};
}

const char* DqnLearner::fused_kernel() const { return fused_->kernel(); }

UpdateStats DqnLearner::Update(const SampledBatch& b) {
  if (config_.fused_update) return FusedUpdate(b);
  const int64_t n = static_cast<int64_t>(b.actions.size());
  std::vector<float> targets = Targets(b);
  auto s = torch::from_blob(const_cast<float*>(b.states.data()), {n, config_.state_dim});
  auto a = torch::from_blob(const_cast<int64_t*>(b.actions.data()), {n, 1}, torch::kInt64);
  auto w = torch::from_blob(const_cast<float*>(b.weights.data()), {n});
  auto y = torch::from_blob(targets.data(), {n});

  auto q = nets_->online->forward(s).gather(1, a).squeeze(1);
  auto td = (y - q).detach();
  at::Tensor per;
  if (config_.loss == "huber") {
    per = torch::smooth_l1_loss(q, y, at::Reduction::None);
  } else {
    per = (q - y).pow(2);
  }
  auto loss = (w * per).mean();
  nets_->optimizer->zero_grad();
  loss.backward();
  nets_->optimizer->step();

  ++updates_;
  if (updates_ % config_.target_update_every == 0) SyncTarget();
  actor_stale_ = true;

  auto td_c = td.contiguous();
  replay_.UpdatePriorities(b.indices, std::span<const float>(td_c.data_ptr<float>(), n));
  UpdateStats st;
  st.loss = loss.item<double>();
  st.q_mean = q.detach().mean().item<double>();
  st.td_abs_mean = td.abs().mean().item<double>();
  return st;
}

void DqnLearner::EndEpisode() {
  ++episodes_;
  ApplyLrSchedule();
}

void DqnLearner::ApplyLrSchedule() {
  // RLoT Table 21: lr x0.5 every 1000 episodes (a StepLR over episodes).
  const double lr =
      config_.lr *
      std::pow(config_.lr_decay, static_cast<double>(episodes_ / config_.lr_decay_episodes));
  for (auto& group : nets_->optimizer->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
}

double DqnLearner::lr() const {
  return static_cast<torch::optim::AdamOptions&>(nets_->optimizer->param_groups()[0].options())
      .lr();
}

std::vector<float> DqnLearner::OnlineQ(std::span<const float> states) const {
  torch::NoGradGuard no_grad;
  const int64_t n = static_cast<int64_t>(states.size()) / config_.state_dim;
  auto q =
      nets_->online
          ->forward(torch::from_blob(const_cast<float*>(states.data()), {n, config_.state_dim}))
          .contiguous();
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + q.numel());
}

std::vector<float> DqnLearner::TargetQ(std::span<const float> states) const {
  torch::NoGradGuard no_grad;
  const int64_t n = static_cast<int64_t>(states.size()) / config_.state_dim;
  auto q =
      nets_->target
          ->forward(torch::from_blob(const_cast<float*>(states.data()), {n, config_.state_dim}))
          .contiguous();
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + q.numel());
}

Status DqnLearner::Save(const std::string& dir) const {
  // Nets: online.* and target.* in one safetensors file.
  std::vector<safetensors::TensorRef> refs;
  std::vector<at::Tensor> keep;
  for (const auto& [prefix, net] :
       {std::pair<std::string, const models::DuelingQNet*>{"online.", &nets_->online},
        {"target.", &nets_->target}}) {
    for (const auto& p : (*net)->named_parameters()) {
      at::Tensor t = p.value().detach().contiguous();
      keep.push_back(t);
      refs.push_back({prefix + p.key(), safetensors::Dtype::kF32,
                      std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), TensorBytes(t)});
    }
  }
  ALLOT_RETURN_IF_ERROR(safetensors::Write(dir + "/navigator.safetensors", refs));

  std::ostringstream optim;
  torch::serialize::OutputArchive archive;
  nets_->optimizer->save(archive);
  archive.save_to(optim);
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/optimizer.pt", optim.str()));

  ALLOT_ASSIGN_OR_RETURN(std::string replay, replay_.Serialize());
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/replay.safetensors", replay));

  std::ostringstream rng;
  rng << rng_;
  json pending = json::array();
  for (const auto& t : pending_) {
    pending.push_back({{"state", t.state},
                       {"action", t.action},
                       {"reward_bits", std::bit_cast<uint32_t>(t.reward)},
                       {"next_state", t.next_state},
                       {"done", t.done}});
  }
  json state = {{"epsilon_bits", DoubleBits(epsilon_)},
                {"episodes", episodes_},
                {"env_steps", env_steps_},
                {"updates", updates_},
                {"rng", rng.str()},
                {"pending", pending},
                {"state_dim", config_.state_dim},
                {"num_actions", config_.num_actions},
                {"hidden", config_.hidden},
                {"replay_capacity", config_.replay_capacity}};
  return WriteFileAtomic(dir + "/learner.json", state.dump(1) + "\n");
}

Status DqnLearner::Load(const std::string& dir) {
  std::string text;
  ALLOT_RETURN_IF_ERROR(ReadFile(dir + "/learner.json", &text));
  json state;
  try {
    state = json::parse(text);
    for (const char* key : {"state_dim", "num_actions", "hidden", "replay_capacity"}) {
      const int saved = state.at(key).get<int>();
      const int mine = key == std::string("state_dim")     ? config_.state_dim
                       : key == std::string("num_actions") ? config_.num_actions
                       : key == std::string("hidden")      ? config_.hidden
                                                           : config_.replay_capacity;
      if (saved != mine) {
        return InvalidArgument(dir + "/learner.json: checkpoint has dqn." + key + " = " +
                               std::to_string(saved) + " but the config says " +
                               std::to_string(mine));
      }
    }
    epsilon_ = BitsDouble(state.at("epsilon_bits").get<std::string>());
    episodes_ = state.at("episodes").get<int64_t>();
    env_steps_ = state.at("env_steps").get<int64_t>();
    updates_ = state.at("updates").get<int64_t>();
    std::istringstream rng(state.at("rng").get<std::string>());
    rng >> rng_;
    if (rng.fail()) return DataLoss(dir + "/learner.json: rng state is malformed");
    pending_.clear();
    for (const auto& p : state.at("pending")) {
      Transition t;
      t.state = p.at("state").get<std::vector<float>>();
      t.action = p.at("action").get<int>();
      t.reward = std::bit_cast<float>(p.at("reward_bits").get<uint32_t>());
      t.next_state = p.at("next_state").get<std::vector<float>>();
      t.done = p.at("done").get<bool>();
      pending_.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    return DataLoss(dir + "/learner.json: " + e.what());
  }

  ALLOT_ASSIGN_OR_RETURN(auto nav, safetensors::File::Open(dir + "/navigator.safetensors"));
  {
    torch::NoGradGuard no_grad;
    for (const auto& [prefix, net] :
         {std::pair<std::string, models::DuelingQNet*>{"online.", &nets_->online},
          {"target.", &nets_->target}}) {
      for (auto& p : (*net)->named_parameters()) {
        const safetensors::TensorInfo* t = nav->Find(prefix + p.key());
        if (t == nullptr || t->dtype != safetensors::Dtype::kF32 ||
            t->nbytes() != static_cast<uint64_t>(p.value().nbytes())) {
          return DataLoss(nav->path() + ": tensor " + prefix + p.key() + " missing or wrong size");
        }
        std::memcpy(p.value().data_ptr(), nav->Data(*t).data(), t->nbytes());
      }
    }
  }

  std::string optim;
  ALLOT_RETURN_IF_ERROR(ReadFile(dir + "/optimizer.pt", &optim));
  try {
    std::istringstream in(optim);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    nets_->optimizer->load(archive);
  } catch (const std::exception& e) {
    return DataLoss(dir + "/optimizer.pt: " + std::string(e.what()).substr(0, 200));
  }

  std::string replay;
  ALLOT_RETURN_IF_ERROR(ReadFile(dir + "/replay.safetensors", &replay));
  ALLOT_RETURN_IF_ERROR(replay_.Deserialize(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(replay.data()), replay.size()),
      dir + "/replay.safetensors"));
  fused_view_.reset();  // the optimizer state was replaced
  ApplyLrSchedule();
  RefreshActor();
  return Status::Ok();
}

}  // namespace allot::trainer
