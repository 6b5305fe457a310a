#include "core/library_binding.h"

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <system_error>

namespace allot {

std::string DefiningObject(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

Status CheckFilesystemProvider(const std::string& object, const std::string& main_program) {
  const std::string name = std::filesystem::path(object).filename().string();
  if (name.rfind("libstdc++.so", 0) == 0 || object == main_program) return Status::Ok();
  return Internal("std::filesystem is bound to " + object +
                  ", not libstdc++: a PyTorch wheel's libtorch.so exports its own copy, which "
                  "crashes when it removes a directory (checkpoint rotation). Run allot with "
                  "libstdc++ preloaded: source the env.sh that scripts/gpu/build.sh writes into "
                  "its build folder, or set LD_PRELOAD to the system's libstdc++.so.6");
}

Status CheckStdFilesystemBinding() {
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  const RemoveAll remove_all = &std::filesystem::remove_all;
  const std::string object = DefiningObject(reinterpret_cast<const void*>(remove_all));
  if (object.empty()) return Status::Ok();
  const std::string self =
      DefiningObject(reinterpret_cast<const void*>(&CheckStdFilesystemBinding));
  return CheckFilesystemProvider(object, self);
}

}  // namespace allot
