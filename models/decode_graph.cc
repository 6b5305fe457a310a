#include "models/decode_graph.h"

#include <c10/util/Exception.h>

#if ALLOT_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#endif

namespace allot::models {

#if ALLOT_WITH_CUDA

struct DecodeGraph::Impl {
  explicit Impl(const at::Device& device)
      : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}
  c10::cuda::CUDAStream stream;
  std::optional<at::cuda::CUDAGraph> graph;
};

bool DecodeGraph::Available() { return true; }

DecodeGraph::DecodeGraph(const at::Device& device) : impl_(std::make_unique<Impl>(device)) {
  TORCH_CHECK(device.is_cuda(), "DecodeGraph: ", device, " is not a CUDA device");
}

DecodeGraph::~DecodeGraph() = default;

void DecodeGraph::WarmUp(const std::function<void()>& step) {
  // Host synchronisation on both sides: a warm-up runs once per captured batch, and it keeps
  // the caching allocator's blocks of one stream from being reused early by the other.
  c10::cuda::getCurrentCUDAStream(impl_->stream.device_index()).synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(impl_->stream);
    step();
  }
  impl_->stream.synchronize();
}

void DecodeGraph::Capture(const std::function<void()>& step) {
  impl_->graph.reset();
  c10::cuda::getCurrentCUDAStream(impl_->stream.device_index()).synchronize();
  c10::cuda::CUDAStreamGuard guard(impl_->stream);
  impl_->graph.emplace();
  impl_->graph->capture_begin();
  try {
    step();
  } catch (...) {
    // End the capture whatever happened, or the stream stays in capture mode.
    try {
      impl_->graph->capture_end();
    } catch (...) {
    }
    impl_->graph.reset();
    throw;
  }
  try {
    impl_->graph->capture_end();
  } catch (...) {
    impl_->graph.reset();
    throw;
  }
}

void DecodeGraph::Replay() {
  TORCH_CHECK(impl_->graph.has_value(), "DecodeGraph: nothing captured");
  impl_->graph->replay();
}

#else  // !ALLOT_WITH_CUDA

struct DecodeGraph::Impl {};

bool DecodeGraph::Available() { return false; }

DecodeGraph::DecodeGraph(const at::Device& device) {
  TORCH_CHECK(false, "DecodeGraph: this build has no CUDA graphs (ALLOT_WITH_CUDA is off), ",
              device);
}

DecodeGraph::~DecodeGraph() = default;

void DecodeGraph::WarmUp(const std::function<void()>&) {
  TORCH_CHECK(false, "DecodeGraph: no CUDA graphs in this build");
}

void DecodeGraph::Capture(const std::function<void()>&) {
  TORCH_CHECK(false, "DecodeGraph: no CUDA graphs in this build");
}

void DecodeGraph::Replay() { TORCH_CHECK(false, "DecodeGraph: no CUDA graphs in this build"); }

#endif

}  // namespace allot::models
