// DecodeGraph: one decode step (StaticDecoder::Run) recorded as a CUDA graph and replayed, so a
// step costs one graph launch instead of a few hundred kernel launches and their dispatch.
//
// Only the CUDA build (ALLOT_WITH_CUDA) has graphs; elsewhere Available() is false and the
// other calls throw. The recorded kernels read and write the addresses the step used while it
// was captured: the caller keeps every tensor the step touches (inputs, caches, weights, LoRA
// adapters) where it was until the graph is dropped. Not thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace allot::models {

class DecodeGraph {
 public:
  // Whether this build can capture CUDA graphs at all.
  static bool Available();

  // Graphs of steps on `device` (a CUDA device).
  explicit DecodeGraph(const at::Device& device);
  ~DecodeGraph();
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  // Runs `step` eagerly on the capture stream, waiting for the caller's stream before and
  // making it wait after: a real step that also creates what capture may not (cuBLAS
  // workspaces, lazily loaded kernels).
  void WarmUp(const std::function<void()>& step);

  // Records `step` without running it. Throws when capture fails (an operation that
  // synchronises with the host, for one); the graph is then empty.
  void Capture(const std::function<void()>& step);

  // Runs the recorded step on the caller's current stream.
  void Replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allot::models
