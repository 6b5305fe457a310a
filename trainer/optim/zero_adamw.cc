#include "trainer/optim/zero_adamw.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "trainer/comm/communicator.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/multi_tensor_adamw.h"

namespace allot::trainer {

ZeroAdamW::~ZeroAdamW() = default;

Result<std::unique_ptr<ZeroAdamW>> ZeroAdamW::Create(const OptimConfig& config,
                                                     const NamedParameters& params,
                                                     comm::Communicator* comm, int stage) {
  if (stage != 1 && stage != 2) {
    return InvalidArgument("trainer.zero_stage: " + std::to_string(stage) +
                           " (ZeRO shards with stage 1 or 2)");
  }
  // The unsharded optimizer decides the groups and the order; it allocates no state.
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::AdamW> whole, MakeAdamW(config, params));
  std::unique_ptr<ZeroAdamW> z(new ZeroAdamW());
  z->comm_ = comm != nullptr && comm->distributed() ? comm : nullptr;
  z->stage_ = stage;
  z->params_ = OptimizerParameters(*whole);
  const int rank = z->comm_ != nullptr ? z->comm_->rank() : 0;
  const int world = z->comm_ != nullptr ? z->comm_->world_size() : 1;
  ALLOT_ASSIGN_OR_RETURN(z->shard_, FlatShard::Create(z->params_, rank, world));
  // Which group each parameter is in.
  std::vector<size_t> group_of;
  for (size_t g = 0; g < whole->param_groups().size(); ++g) {
    group_of.insert(group_of.end(), whole->param_groups()[g].params().size(), g);
  }
  std::vector<std::vector<at::Tensor>> pieces(whole->param_groups().size());
  z->piece_at_ = z->shard_.PiecesIn(z->shard_.begin(), z->shard_.end());
  for (const FlatShard::Piece& p : z->piece_at_) {
    at::Tensor view = z->params_[p.param].detach().view({-1}).narrow(0, p.param_offset, p.length);
    z->pieces_.push_back(view);
    pieces[group_of[p.param]].push_back(view);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (size_t g = 0; g < pieces.size(); ++g) {
    if (pieces[g].empty()) continue;
    const auto& o =
        static_cast<const torch::optim::AdamWOptions&>(whole->param_groups()[g].options());
    groups.emplace_back(pieces[g], std::make_unique<torch::optim::AdamWOptions>(o));
  }
  z->optimizer_ = std::make_unique<torch::optim::AdamW>(
      std::move(groups), static_cast<const torch::optim::AdamWOptions&>(whole->defaults()));
  const at::Tensor& first = z->params_.front();
  const int64_t bucket_bytes = comm != nullptr ? comm->options().bucket_bytes : 0;
  const int64_t per_rank = bucket_bytes / (static_cast<int64_t>(first.element_size()) * world);
  z->bucket_elements_ =
      bucket_bytes > 0 ? std::clamp<int64_t>(per_rank, 1, z->shard_.chunk()) : z->shard_.chunk();
  return z;
}

void ZeroAdamW::ZeroGrad() {
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
  for (at::Tensor& p : pieces_) p.mutable_grad() = at::Tensor();
  grad_chunk_ = at::Tensor();  // backward holds the whole gradients; not the chunk as well
}

Status ZeroAdamW::ReduceGradients() {
  torch::NoGradGuard no_grad;
  if (stage_ == 1) {
    for (at::Tensor& p : params_) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    }
    if (comm_ != nullptr) ALLOT_RETURN_IF_ERROR(comm_->SumGradients(params_));
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const FlatShard::Piece& p = piece_at_[i];
      pieces_[i].mutable_grad() =
          params_[p.param].grad().view({-1}).narrow(0, p.param_offset, p.length);
    }
    return Status::Ok();
  }
  // Stage 2: bucket k holds, for every rank r, the elements [r S + k b, r S + (k + 1) b) of the
  // flat gradient; its reduce-scatter leaves rank r the sum of its part.
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params_) grads.push_back(p.grad());
  const int world = shard_.world();
  const int64_t chunk = shard_.chunk();
  grad_chunk_ = torch::empty({chunk}, params_.front().options());
  for (int64_t lo = 0; lo < chunk; lo += bucket_elements_) {
    const int64_t len = std::min(bucket_elements_, chunk - lo);
    at::Tensor out = grad_chunk_.narrow(0, lo, len);
    if (comm_ == nullptr) {
      shard_.Read(grads, lo, out);
      continue;
    }
    at::Tensor in = torch::empty({len * world}, grad_chunk_.options());
    for (int r = 0; r < world; ++r) shard_.Read(grads, r * chunk + lo, in.narrow(0, r * len, len));
    ALLOT_RETURN_IF_ERROR(comm_->ReduceScatterSum(in, out));
  }
  grads.clear();
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();  // only the chunk stays
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const FlatShard::Piece& p = piece_at_[i];
    pieces_[i].mutable_grad() = grad_chunk_.narrow(0, p.flat_offset - shard_.begin(), p.length);
  }
  return Status::Ok();
}

Result<double> ZeroAdamW::ClipGradNorm(double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : pieces_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  double norm = 0.0;
  if (stage_ == 1) {
    // Every rank holds the whole summed gradient: grad_clip.h's norm, bit for bit the unsharded
    // run's (the scaling below then touches this rank's pieces only).
    norm = trainer::ClipGradNorm(params_, 0.0);
  } else {
    // Each rank's sum of squares over its chunk, in float64, added over ranks.
    double sum_sq = 0.0;
    if (!grads.empty()) {
      std::vector<at::Tensor> norms;
      for (const at::Tensor& g : grads) norms.push_back(g.to(torch::kFloat64).norm());
      const at::Tensor host = torch::stack(norms).to(torch::kCPU).contiguous();
      const double* n = host.data_ptr<double>();
      for (int64_t i = 0; i < host.numel(); ++i) sum_sq += n[i] * n[i];
    }
    std::vector<double> total = {sum_sq};
    if (comm_ != nullptr) ALLOT_RETURN_IF_ERROR(comm_->AllReduceScalars(total, /*mean=*/false));
    norm = std::sqrt(total[0]);
  }
  if (max_norm > 0.0 && std::isfinite(norm) && norm > max_norm && !grads.empty()) {
    at::_foreach_mul_(grads, at::Scalar(max_norm / (norm + 1e-6)));
  }
  return norm;
}

Status ZeroAdamW::Step() {
  StepAdamW(*optimizer_);
  if (comm_ == nullptr) return Status::Ok();  // one shard: the pieces are the parameters
  torch::NoGradGuard no_grad;
  const int world = shard_.world();
  const int64_t chunk = shard_.chunk();
  const at::TensorOptions options = params_.front().options();
  for (int64_t lo = 0; lo < chunk; lo += bucket_elements_) {
    const int64_t len = std::min(bucket_elements_, chunk - lo);
    at::Tensor mine = torch::empty({len}, options);
    shard_.Read(params_, shard_.begin() + lo, mine);
    at::Tensor all = torch::empty({len * world}, options);
    ALLOT_RETURN_IF_ERROR(comm_->AllGather(mine, all));
    for (int r = 0; r < world; ++r) {
      if (r != shard_.rank()) shard_.Write(all.narrow(0, r * len, len), r * chunk + lo, params_);
    }
  }
  return Status::Ok();
}

int64_t ZeroAdamW::StateBytes() const {
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer_->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    for (const at::Tensor& t : {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()}) {
      if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
    }
  }
  return bytes;
}

int64_t ZeroAdamW::GradientBytes() const {
  int64_t bytes = grad_chunk_.defined() ? static_cast<int64_t>(grad_chunk_.nbytes()) : 0;
  for (const at::Tensor& p : params_) {
    if (p.grad().defined()) bytes += static_cast<int64_t>(p.grad().nbytes());
  }
  return bytes;
}

std::string ZeroStateFileName(int rank, int shards) {
  if (shards <= 0) return "optimizer.safetensors";
  char name[64];
  std::snprintf(name, sizeof(name), "optimizer.rank-%05d-of-%05d.safetensors", rank, shards);
  return name;
}

Result<std::string> OptimizerStateFile(const std::string& dir, int rank, int shards) {
  namespace fs = std::filesystem;
  // What the checkpoint holds: -1 nothing, 0 unsharded, N > 0 ZeRO shards of N ranks.
  int written = -1;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / ZeroStateFileName(0, 0), ec)) {
    written = 0;
  } else {
    static const std::regex kShard(R"(optimizer\.rank-\d{5}-of-(\d{5})\.safetensors)");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::smatch m;
      const std::string name = entry.path().filename().string();
      if (std::regex_match(name, m, kShard)) {
        written = std::stoi(m[1].str());
        break;
      }
    }
  }
  auto describe = [](int n) {
    return n == 0 ? std::string("unsharded (trainer.zero_stage 0, or one rank)")
                  : "as ZeRO shards of " + std::to_string(n) + " ranks (trainer.zero_stage > 0)";
  };
  if (written < 0) {
    return DataLoss(dir + ": no optimizer state (" + ZeroStateFileName(0, 0) +
                    " or optimizer.rank-*-of-*.safetensors)");
  }
  if (written != shards) {
    return InvalidArgument(dir + ": its optimizer state was written " + describe(written) +
                           ", and this run keeps it " + describe(shards) +
                           ": resume on the world size and trainer.zero_stage that wrote it");
  }
  const std::string path = (fs::path(dir) / ZeroStateFileName(rank, shards)).string();
  if (!fs::exists(path, ec)) return DataLoss(path + ": missing (the checkpoint is incomplete)");
  return path;
}

}  // namespace allot::trainer
