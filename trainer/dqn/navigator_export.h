// `allot export RUN --format onnx|safetensors`: the trained navigator for serving.
//
//   onnx:        <out>/navigator.onnx (see navigator_onnx.h), checked with libonnx's checker.
//   safetensors: <out>/navigator.safetensors (DuelingQNetImpl names, F32) and
//                <out>/navigator.json, the spec: shapes, input scaling, action names, the
//                network and how Q is formed.
#pragma once

#include <string>

#include "core/status.h"
#include "trainer/dqn/navigator_weights.h"

namespace allot::trainer {

// The navigator.json spec for `weights`.
std::string NavigatorSpecJson(const NavigatorWeights& weights);

// Writes the export of the navigator at `run_dir_or_checkpoint` (anything
// LoadNavigatorWeights accepts) into `out_dir` (created). Returns the written file paths.
Result<std::vector<std::string>> ExportNavigator(const std::string& run_dir_or_checkpoint,
                                                 const std::string& format,
                                                 const std::string& out_dir);

// The CLI entry point: prints what it wrote (or the error) and returns the exit code
// (0 ok, 1 error).
int RunExport(const std::string& run_dir_or_checkpoint, const std::string& format,
              const std::string& out_dir);

}  // namespace allot::trainer
