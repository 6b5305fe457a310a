#include "models/cpu_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>

namespace allot::models {

bool SetCpuThreads(int threads) {
  threads = std::max(threads, 1);
  at::set_num_threads(threads);
  // OpenBLAS exports this; the reference BLAS has no pool and no such symbol.
  using SetBlasThreads = void (*)(int);
  auto* set_blas =
      reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_blas == nullptr) return false;
  set_blas(threads);
  return true;
}

}  // namespace allot::models
