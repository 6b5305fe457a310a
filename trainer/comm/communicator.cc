#include "trainer/comm/communicator.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef ALLOT_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#ifdef ALLOT_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "trainer/comm/tensor_buckets.h"

namespace allot::trainer::comm {
namespace {

std::chrono::milliseconds ToMillis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

#ifdef ALLOT_WITH_GLOO
// Gloo's transport device: the interface GLOO_SOCKET_IFNAME names (as in PyTorch), loopback
// when the store is on loopback (all ranks on this host), else the address of the hostname.
std::shared_ptr<gloo::transport::Device> GlooDevice(const DistEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (IsLoopback(env.master_addr)) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

// LibTorch 2 split the backends (ProcessGroupGloo, ProcessGroupNCCL) from the ProcessGroup that
// dispatches to them; allot talks to one backend directly, as 1.13's ProcessGroup did.
#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

}  // namespace

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Group> group;
};

Communicator::Communicator(const DistEnv& env, const CommOptions& options)
    : env_(env), options_(options) {}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::Single() {
  return std::unique_ptr<Communicator>(new Communicator(DistEnv{}, CommOptions{}));
}

std::string Communicator::Where() const {
  return "rank " + std::to_string(env_.rank) + " of " + std::to_string(env_.world_size) + " (" +
         backend_ + ", store " + env_.master_addr + ":" + std::to_string(env_.master_port) + ")";
}

Result<std::unique_ptr<Communicator>> Communicator::Create(const DistEnv& env,
                                                           const CommOptions& options) {
  if (env.world_size <= 1) {
    auto single = Single();
    single->options_ = options;
    return single;
  }
  return CreateGroup(env, options);
}

Result<std::unique_ptr<Communicator>> Communicator::CreateGroup(const DistEnv& env,
                                                                const CommOptions& options) {
  if (env.world_size < 1) {
    return InvalidArgument("WORLD_SIZE=" + std::to_string(env.world_size) + " (must be >= 1)");
  }
  if (env.rank < 0 || env.rank >= env.world_size) {
    return InvalidArgument("RANK=" + std::to_string(env.rank) +
                           " outside WORLD_SIZE=" + std::to_string(env.world_size));
  }
  if (options.timeout_s <= 0) return InvalidArgument("comm.timeout_s: must be positive");
  std::string backend = options.backend;
  if (backend == "auto") {
#ifdef ALLOT_WITH_CUDA
    backend = torch::cuda::is_available() ? "nccl" : "gloo";
#else
    backend = "gloo";
#endif
  }
  if (backend != "gloo" && backend != "nccl") {
    return InvalidArgument("comm.backend: '" + options.backend + "' (expected auto | gloo | nccl)");
  }
#ifndef ALLOT_WITH_CUDA
  if (backend == "nccl") {
    return InvalidArgument("comm.backend: nccl needs a CUDA build of allot (ALLOT_WITH_CUDA)");
  }
#endif
#ifndef ALLOT_WITH_GLOO
  if (backend == "gloo") {
    return InvalidArgument(
        "comm.backend: gloo is not in this build (its LibTorch ships no Gloo headers); use nccl");
  }
#endif
  std::unique_ptr<Communicator> comm(new Communicator(env, options));
  comm->backend_ = backend;
  comm->impl_ = std::make_unique<Impl>();
  const auto timeout = ToMillis(options.timeout_s);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0;
    store_options.numWorkers = static_cast<size_t>(env.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = timeout;
    comm->impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    return Unavailable(comm->Where() + ": cannot join the TCPStore: " + e.what());
  }
  try {
    if (backend == "gloo") {
#ifdef ALLOT_WITH_GLOO
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
      gloo_options->devices.push_back(GlooDevice(env));
      comm->impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          comm->impl_->store, env.rank, env.world_size, gloo_options);
#endif
    } else {
#ifdef ALLOT_WITH_CUDA
      // LOCAL_RANK picks the GPU; a launcher that shows each rank one GPU makes it device 0.
      const int devices = static_cast<int>(c10::cuda::device_count());
      if (devices == 0) return InvalidArgument(comm->Where() + ": nccl backend but no GPU");
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank % devices));
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      comm->impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          comm->impl_->store, env.rank, env.world_size, nccl_options);
#endif
    }
  } catch (const std::exception& e) {
    return Unavailable(comm->Where() + ": cannot create the process group: " + e.what());
  }
  // Every rank has its process group before the first collective.
  if (Status s = comm->Barrier(); !s.ok()) return s;
  return comm;
}

Status Communicator::Collective(const std::vector<at::Tensor>& tensors, bool broadcast, int root,
                                double timeout_s) {
  if (!distributed() || tensors.empty()) return Status::Ok();
  if (root < 0 || root >= env_.world_size) {
    return InvalidArgument(Where() + ": broadcast root " + std::to_string(root));
  }
  torch::NoGradGuard no_grad;
  try {
    for (const Bucket& bucket : PlanBuckets(tensors, options_.bucket_bytes)) {
      at::Tensor flat = FlattenBucket(tensors, bucket);
      // Gloo has no bfloat16/half reductions on CPU: reduce in float32.
      const bool widen = backend_ == "gloo" && !broadcast &&
                         (flat.scalar_type() == at::kBFloat16 || flat.scalar_type() == at::kHalf);
      // NCCL reduces device memory only: host tensors (scalars, strings) go through the GPU.
      const bool stage = backend_ == "nccl" && !flat.is_cuda();
      if (widen) flat = flat.to(at::kFloat);
      if (stage) flat = flat.to(at::Device(at::kCUDA));
      std::vector<at::Tensor> buffer{flat};
      c10::intrusive_ptr<c10d::Work> work;
      if (broadcast) {
        c10d::BroadcastOptions opts;
        opts.rootRank = root;
        if (timeout_s > 0) opts.timeout = ToMillis(timeout_s);
        work = impl_->group->broadcast(buffer, opts);
      } else {
        c10d::AllreduceOptions opts;
        opts.reduceOp = c10d::ReduceOp::SUM;
        work = impl_->group->allreduce(buffer, opts);
      }
      work->wait();
      UnflattenBucket(buffer[0], tensors, bucket);
    }
  } catch (const std::exception& e) {
    return Unavailable(Where() + ": " + (broadcast ? "broadcast" : "all-reduce") +
                       " failed: " + e.what());
  }
  return Status::Ok();
}

Status Communicator::AllReduceSum(const std::vector<at::Tensor>& tensors) {
  return Collective(tensors, /*broadcast=*/false, 0);
}

Status Communicator::AllReduceMean(const std::vector<at::Tensor>& tensors) {
  if (!distributed()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(AllReduceSum(tensors));
  torch::NoGradGuard no_grad;
  for (const at::Tensor& t : tensors) {
    at::Tensor m = t;
    m.div_(static_cast<double>(env_.world_size));
  }
  return Status::Ok();
}

std::vector<at::Tensor> Communicator::Gradients(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const at::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    at::Tensor param = p;
    if (!param.grad().defined()) param.mutable_grad() = torch::zeros_like(param);
    grads.push_back(param.grad());
  }
  return grads;
}

Status Communicator::AverageGradients(const std::vector<at::Tensor>& parameters) {
  if (!distributed()) return Status::Ok();
  return AllReduceMean(Gradients(parameters));
}

Status Communicator::SumGradients(const std::vector<at::Tensor>& parameters) {
  if (!distributed()) return Status::Ok();
  return AllReduceSum(Gradients(parameters));
}

Status Communicator::Broadcast(const std::vector<at::Tensor>& tensors, int root) {
  return Collective(tensors, /*broadcast=*/true, root);
}

Status Communicator::AllReduceScalars(std::vector<double>& values, bool mean) {
  if (!distributed() || values.empty()) return Status::Ok();
  at::Tensor t = torch::tensor(values, torch::kFloat64);
  ALLOT_RETURN_IF_ERROR(mean ? AllReduceMean({t}) : AllReduceSum({t}));
  for (size_t i = 0; i < values.size(); ++i) values[i] = t[static_cast<int64_t>(i)].item<double>();
  return Status::Ok();
}

Status Communicator::BroadcastString(std::string& text, int root, double timeout_s) {
  if (!distributed()) return Status::Ok();
  at::Tensor size = torch::tensor({static_cast<int64_t>(text.size())}, torch::kInt64);
  ALLOT_RETURN_IF_ERROR(Collective({size}, /*broadcast=*/true, root, timeout_s));
  const int64_t n = size.item<int64_t>();
  at::Tensor bytes = torch::zeros({n}, torch::kUInt8);
  if (env_.rank == root && n > 0) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  ALLOT_RETURN_IF_ERROR(Broadcast({bytes}, root));
  text.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(n));
  return Status::Ok();
}

Status Communicator::Barrier() {
  if (!distributed()) return Status::Ok();
  try {
    impl_->group->barrier()->wait();
  } catch (const std::exception& e) {
    return Unavailable(Where() + ": barrier failed: " + e.what());
  }
  return Status::Ok();
}

Status Communicator::ReduceScatterSum(const at::Tensor& input, const at::Tensor& output) {
  torch::NoGradGuard no_grad;
  const int64_t n = output.numel();
  if (input.dim() != 1 || output.dim() != 1 || input.numel() != n * env_.world_size) {
    return InvalidArgument(Where() + ": reduce-scatter of " + std::to_string(input.numel()) +
                           " elements into chunks of " + std::to_string(n));
  }
  at::Tensor out = output;
  if (!distributed()) {
    out.copy_(input.narrow(0, 0, n));
    return Status::Ok();
  }
  try {
    at::Tensor in = input.contiguous();
    const bool widen =
        backend_ == "gloo" && (in.scalar_type() == at::kBFloat16 || in.scalar_type() == at::kHalf);
    const bool stage = backend_ == "nccl" && !in.is_cuda();
    if (widen) in = in.to(at::kFloat);
    if (stage) in = in.to(at::Device(at::kCUDA));
    if (backend_ == "gloo") {
      // LibTorch 1.13's ProcessGroupGloo has no reduce_scatter: one reduce per chunk, to the
      // rank that owns it (N collectives instead of one).
      if (!widen) in = in.clone();  // reduce overwrites its input
      for (int r = 0; r < env_.world_size; ++r) {
        std::vector<at::Tensor> buffer{in.narrow(0, r * n, n)};
        c10d::ReduceOptions opts;
        opts.reduceOp = c10d::ReduceOp::SUM;
        opts.rootRank = r;
        impl_->group->reduce(buffer, opts)->wait();
      }
      out.copy_(in.narrow(0, env_.rank * n, n));
      return Status::Ok();
    }
    at::Tensor result = stage ? torch::empty({n}, in.options()) : out;
    std::vector<at::Tensor> outputs{result};
    std::vector<std::vector<at::Tensor>> inputs(1);
    for (int r = 0; r < env_.world_size; ++r) inputs[0].push_back(in.narrow(0, r * n, n));
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    impl_->group->reduce_scatter(outputs, inputs, opts)->wait();
    if (!result.is_same(out)) out.copy_(outputs[0]);
  } catch (const std::exception& e) {
    return Unavailable(Where() + ": reduce-scatter failed: " + e.what());
  }
  return Status::Ok();
}

Status Communicator::AllGather(const at::Tensor& input, const at::Tensor& output) {
  torch::NoGradGuard no_grad;
  const int64_t n = input.numel();
  if (input.dim() != 1 || output.dim() != 1 || output.numel() != n * env_.world_size) {
    return InvalidArgument(Where() + ": all-gather of chunks of " + std::to_string(n) +
                           " elements into " + std::to_string(output.numel()));
  }
  at::Tensor out = output;
  if (!distributed()) {
    out.copy_(input);
    return Status::Ok();
  }
  try {
    // Gathering moves bits: 2-byte floats travel as int16, which every backend carries.
    auto bits = [](const at::Tensor& t) {
      return t.element_size() == 2 && t.is_floating_point() ? t.view(at::kShort) : t;
    };
    at::Tensor in = bits(input.contiguous());
    const bool stage = backend_ == "nccl" && !in.is_cuda();
    if (stage) in = in.to(at::Device(at::kCUDA));
    at::Tensor result = stage ? torch::empty({n * env_.world_size}, in.options())
                              : (out.is_contiguous() ? bits(out) : torch::empty_like(bits(out)));
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < env_.world_size; ++r) outputs[0].push_back(result.narrow(0, r * n, n));
    std::vector<at::Tensor> inputs{in};
    impl_->group->allgather(outputs, inputs)->wait();
    // Gloo writes its own buffers when the chunks are not one tensor's storage: copy them back.
    for (int r = 0; r < env_.world_size; ++r) {
      at::Tensor chunk = result.narrow(0, r * n, n);
      if (!outputs[0][r].is_same(chunk)) chunk.copy_(outputs[0][r]);
    }
    if (!bits(out).is_same(result)) bits(out).copy_(result);
  } catch (const std::exception& e) {
    return Unavailable(Where() + ": all-gather failed: " + e.what());
  }
  return Status::Ok();
}

Status Communicator::GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) {
  all->clear();
  if (!distributed()) {
    all->push_back(mine);
    return Status::Ok();
  }
  if (root < 0 || root >= env_.world_size) {
    return InvalidArgument(Where() + ": gather root " + std::to_string(root));
  }
  // The sizes first (every rank's), then one chunk of the largest size per rank.
  at::Tensor size = torch::tensor({static_cast<int64_t>(mine.size())}, torch::kInt64);
  at::Tensor sizes = torch::zeros({env_.world_size}, torch::kInt64);
  ALLOT_RETURN_IF_ERROR(AllGather(size, sizes));
  const int64_t longest = std::max<int64_t>(1, sizes.max().item<int64_t>());
  at::Tensor bytes = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), mine.data(), mine.size());
  // A gather, not an all-gather: only the root holds every rank's bytes (optimizer shards).
  const bool stage = backend_ == "nccl";
  std::vector<at::Tensor> inputs{stage ? bytes.to(at::Device(at::kCUDA)) : bytes};
  std::vector<std::vector<at::Tensor>> outputs(env_.rank == root ? 1 : 0);
  if (env_.rank == root) {
    for (int r = 0; r < env_.world_size; ++r) outputs[0].push_back(torch::empty_like(inputs[0]));
  }
  try {
    c10d::GatherOptions opts;
    opts.rootRank = root;
    impl_->group->gather(outputs, inputs, opts)->wait();
  } catch (const std::exception& e) {
    return Unavailable(Where() + ": gather failed: " + e.what());
  }
  if (env_.rank != root) return Status::Ok();
  for (int r = 0; r < env_.world_size; ++r) {
    const at::Tensor host = outputs[0][r].to(at::kCPU).contiguous();
    all->emplace_back(static_cast<const char*>(host.data_ptr()),
                      static_cast<size_t>(sizes[r].item<int64_t>()));
  }
  return Status::Ok();
}

Result<Communicator*> ProcessCommunicator(const CommOptions& options) {
  static std::mutex mu;
  static std::unique_ptr<Communicator> instance;
  std::lock_guard<std::mutex> lock(mu);
  if (instance == nullptr) {
    ALLOT_ASSIGN_OR_RETURN(DistEnv env, ReadDistEnv());
    ALLOT_ASSIGN_OR_RETURN(instance, Communicator::Create(env, options));
  }
  return instance.get();
}

}  // namespace allot::trainer::comm
