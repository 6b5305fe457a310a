// CPU thread counts for the model stack.
#pragma once

namespace allot::models {

// Sets the threads of LibTorch's CPU kernels and, when the process's BLAS is OpenBLAS, of the
// BLAS's own pool. Debian's LibTorch calls whatever libblas.so.3 the system provides without
// knowing which one it is, so at::set_num_threads alone leaves OpenBLAS with one thread per
// core, competing with LibTorch's threads and with everything else in the process.
// Returns whether a BLAS thread pool was found and set.
bool SetCpuThreads(int threads);

}  // namespace allot::models
