#include "bench/trainer/kineto_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <set>

namespace allot::bench {

Status WriteKinetoTrace(const std::string& path, bool cuda, const std::function<Status()>& region) {
  namespace prof = torch::profiler::impl;
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  std::set<prof::ActivityType> activities = {prof::ActivityType::CPU};
  if (cuda) activities.insert(prof::ActivityType::CUDA);
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  Status status = region();
  if (cuda) torch::cuda::synchronize();
  std::unique_ptr<torch::autograd::profiler::ProfilerResult> result =
      torch::autograd::profiler::disableProfiler();
  ALLOT_RETURN_IF_ERROR(status);
  if (result == nullptr) return Internal("profiler: no result (is Kineto built into LibTorch?)");
  result->save(path);
  return Status::Ok();
}

}  // namespace allot::bench
