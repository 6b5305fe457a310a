// The navigator as an ONNX model (libonnx's protobuf schema), and a small reference
// interpreter for the graphs it writes.
//
// Graph (opset 13): state float[N, state_dim] -> q_values float[N, num_actions]
//   x = Div(Sub(state, input_offset), input_scale)           RLoT's (x - 1.5) / 1.5
//   h = Relu(Gemm(x, trunk))
//   A = Gemm(Relu(Gemm(h, adv_hidden)), adv_out)
//   V = Gemm(Relu(Gemm(h, value_hidden)), value_out)
//   q_values = Add(V, Sub(A, ReduceMean(A, axes=[1])))       Q = V + A - mean(A)
// Gemm nodes use transB = 1, so the initializers keep PyTorch's [out, in] layout.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "trainer/dqn/navigator_weights.h"

namespace allot::trainer {

// True when this build links libonnx (CMake option ALLOT_WITH_ONNX).
bool OnnxExportAvailable();

// The serialized ModelProto.
Result<std::string> BuildNavigatorOnnx(const NavigatorWeights& weights);

// libonnx's checker (onnx::checker::check_model) plus shape inference: the output must be
// [N, num_actions] float.
Status CheckNavigatorOnnx(const std::string& model_bytes, const std::string& source);

// Evaluates the graph by interpreting its nodes in order; supports exactly the ops the export
// writes (Sub, Div, Gemm, Relu, ReduceMean, Add) with their broadcasting. `states` is
// [batch * state_dim]; returns [batch * num_actions].
Result<std::vector<float>> EvalNavigatorOnnx(const std::string& model_bytes,
                                             std::span<const float> states, int batch);

}  // namespace allot::trainer
