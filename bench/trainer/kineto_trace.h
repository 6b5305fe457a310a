// A Chrome trace of one region of a benchmark, CPU operators and (on a CUDA device) GPU kernels,
// through LibTorch's Kineto profiler - the C++ side of torch.profiler. bench/gpu/trace_summary.py
// sums a trace's kernel time by kind.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace allot::bench {

// Runs `region` with the profiler on and writes the trace to `path` (Chrome trace JSON).
Status WriteKinetoTrace(const std::string& path, bool cuda, const std::function<Status()>& region);

}  // namespace allot::bench
