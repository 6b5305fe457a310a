// Communicator: the collectives of data-parallel learner ranks, on LibTorch's own c10d process
// groups (ProcessGroupGloo on CPU, ProcessGroupNCCL in a CUDA build) over a c10d TCPStore that
// rank 0 hosts at MASTER_ADDR:MASTER_PORT. Nothing here implements a collective itself.
//
// A data-parallel step (each rank holds the same weights and its own share of the batch):
//
//   auto comm = comm::ProcessCommunicator();          // RANK, WORLD_SIZE, ... from the env
//   (*comm)->BroadcastParameters(params);             // once, so every rank starts from rank 0
//   loss.backward();
//   (*comm)->AverageGradients(params);                // bucketed all-reduce, then / world_size
//   optimizer.step();
//   if ((*comm)->is_rank0()) SaveCheckpoint(...);     // rank 0 owns checkpoints and publishing
//
// A world of one has no store and no process group: every collective returns at once and
// leaves the tensors as they are. Collectives must be called by every rank in the same order
// with tensors of the same shapes. Not thread-safe: one caller at a time.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "trainer/comm/dist_env.h"

namespace allot::trainer::comm {

struct CommOptions {
  // "auto" (NCCL when built with CUDA and a GPU is present, else Gloo) | "gloo" | "nccl".
  std::string backend = "auto";
  // DDP's default bucket_cap_mb = 25.
  int64_t bucket_bytes = int64_t{25} << 20;
  // Joining the world and each collective; a rank that does not show up fails the others.
  double timeout_s = 300.0;
};

class Communicator {
 public:
  // A world of one (no store, no process group).
  static std::unique_ptr<Communicator> Single();
  // Joins the world `env` describes; blocks until every rank has joined or the timeout passes.
  // A world of one gives Single(). Errors name the store address and the backend.
  static Result<std::unique_ptr<Communicator>> Create(const DistEnv& env,
                                                      const CommOptions& options = {});
  // Create() without the shortcut: the store and the process group are built even for a world of
  // one, so that every collective runs through the backend. Two NCCL ranks cannot share one GPU,
  // so the GPU tests check the nccl backend this way.
  static Result<std::unique_ptr<Communicator>> CreateGroup(const DistEnv& env,
                                                           const CommOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  bool is_rank0() const { return env_.rank == 0; }
  // Whether a process group exists (every world of more than one; a world of one from
  // CreateGroup): collectives are no-ops without one.
  bool distributed() const { return impl_ != nullptr; }
  // "none" (world of one), "gloo" or "nccl".
  const std::string& backend() const { return backend_; }
  const CommOptions& options() const { return options_; }
  // The engine's bucket size (its config) for the collectives that follow; <= 0 = one bucket.
  void set_bucket_bytes(int64_t bytes) { options_.bucket_bytes = bytes; }

  // In place: every tensor becomes the sum / the mean over ranks. Tensors are packed into
  // buckets of options().bucket_bytes (flatten -> all-reduce -> unflatten).
  Status AllReduceSum(const std::vector<at::Tensor>& tensors);
  Status AllReduceMean(const std::vector<at::Tensor>& tensors);
  // Averages the .grad() of `parameters` that require grad. A parameter without a gradient
  // gets a zero one first, so that every rank reduces the same buckets.
  Status AverageGradients(const std::vector<at::Tensor>& parameters);
  // Sums the .grad() of `parameters` over ranks instead: for losses that each rank already
  // divided by the global count (token-weighted data parallelism, grad_accumulation.h), so that
  // N ranks give exactly the gradient of one rank on the union batch.
  Status SumGradients(const std::vector<at::Tensor>& parameters);
  // In place: every rank's tensors become `root`'s (bucketed like the all-reduce).
  Status Broadcast(const std::vector<at::Tensor>& tensors, int root = 0);
  Status BroadcastParameters(const std::vector<at::Tensor>& parameters) {
    return Broadcast(parameters, 0);
  }
  // Sums or averages a few scalars (metrics, token counts) over ranks, in place.
  Status AllReduceScalars(std::vector<double>& values, bool mean);
  // Every rank gets `root`'s string (a run name, a seed, a checkpoint path).
  // `timeout_s` > 0 replaces options().timeout_s for this call (a rank that waits while the root
  // collects rollouts waits longer than a collective normally takes).
  Status BroadcastString(std::string& text, int root = 0, double timeout_s = 0.0);
  Status Barrier();

  // ZeRO's collectives (trainer/optim/zero_adamw.h). `input` is world_size() equal chunks one
  // after the other (1-D); `output` (1-D, one chunk) becomes the sum over ranks of chunk rank().
  // A world of one copies its only chunk. Gloo reduces bfloat16/half in float32.
  Status ReduceScatterSum(const at::Tensor& input, const at::Tensor& output);
  // Every rank's `input` (1-D, one chunk), rank by rank, into `output` (world_size() chunks),
  // bit for bit.
  Status AllGather(const at::Tensor& input, const at::Tensor& output);
  // `root` receives every rank's bytes in rank order (its own included); the others get an
  // empty list.
  Status GatherBytes(const std::string& mine, std::vector<std::string>* all, int root = 0);

 private:
  struct Impl;
  Communicator(const DistEnv& env, const CommOptions& options);
  Status Collective(const std::vector<at::Tensor>& tensors, bool broadcast, int root,
                    double timeout_s = 0.0);
  std::vector<at::Tensor> Gradients(const std::vector<at::Tensor>& parameters);
  std::string Where() const;

  DistEnv env_;
  CommOptions options_;
  std::string backend_ = "none";
  std::unique_ptr<Impl> impl_;
};

// The communicator of this process, created on the first call from the torchrun variables
// (ReadDistEnv) with `options`; later calls return the same one and ignore `options`. The
// process keeps it until exit, so `allot train` and the engine it runs share one world.
Result<Communicator*> ProcessCommunicator(const CommOptions& options = {});

}  // namespace allot::trainer::comm
