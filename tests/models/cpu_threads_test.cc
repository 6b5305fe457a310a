#include "models/cpu_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace allot::models {
namespace {

// LibTorch's pool and, where the process's BLAS is OpenBLAS, the BLAS's own pool both follow.
TEST(CpuThreadsTest, SetsTorchAndBlasThreads) {
  using GetBlasThreads = int (*)();
  auto* get_blas =
      reinterpret_cast<GetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const int before = at::get_num_threads();
  const bool blas = SetCpuThreads(1);
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(blas, get_blas != nullptr);
  if (get_blas != nullptr) {
    EXPECT_EQ(get_blas(), 1);
  }
  SetCpuThreads(0);  // clamped to one thread, never zero
  EXPECT_EQ(at::get_num_threads(), 1);
  SetCpuThreads(before);
  EXPECT_EQ(at::get_num_threads(), before);
}

}  // namespace
}  // namespace allot::models
