// Which shared object this process's std::filesystem calls bind to. A PyTorch wheel's
// libtorch.so exports its own copy of std::filesystem; where it comes before libstdc++ in the
// lookup order (the CUDA build against the wheel), allot's calls bind to that copy, whose
// remove_all(path, error_code&) calls through a null pointer: checkpoint rotation and every
// removed directory would end the process with SIGSEGV. scripts/gpu/build.sh's BUILD/env.sh
// preloads libstdc++; the check below turns a missing preload into one clear line.
#pragma once

#include <string>

#include "core/status.h"

namespace allot {

// The file of the loaded object (library or program) that defines the code at `address`;
// "" when the dynamic linker cannot say.
std::string DefiningObject(const void* address);

// OK when `object` is libstdc++ or the program itself (`main_program`, a static libstdc++);
// otherwise an error that names `object` and how to run allot instead.
Status CheckFilesystemProvider(const std::string& object, const std::string& main_program);

// CheckFilesystemProvider for this process's std::filesystem::remove_all; OK when the dynamic
// linker cannot say where it lives.
Status CheckStdFilesystemBinding();

}  // namespace allot
