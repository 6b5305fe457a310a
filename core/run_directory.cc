#include "core/run_directory.h"

#include <filesystem>

#include "core/atomic_file.h"

namespace allot {
namespace fs = std::filesystem;

Status ValidateRunName(const std::string& name) {
  if (name.empty()) return InvalidArgument("run.name: must not be empty");
  if (name.size() > 128) return InvalidArgument("run.name: longer than 128 characters");
  if (name == "." || name == "..") return InvalidArgument("run.name: '" + name + "' is reserved");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return InvalidArgument("run.name: '" + name +
                             "' may only contain letters, digits, '.', '_' and '-'");
    }
  }
  return Status::Ok();
}

Result<RunDirectory> RunDirectory::Open(const std::string& root, const std::string& name,
                                        bool resume) {
  ALLOT_RETURN_IF_ERROR(ValidateRunName(name));
  RunDirectory rd;
  rd.name_ = name;
  rd.path_ = (fs::path(root) / name).string();
  std::error_code ec;
  const bool exists = fs::exists(rd.path_, ec);
  if (exists && !resume) {
    return AlreadyExists("run directory " + rd.path_ +
                         " already exists: use `allot resume " + name +
                         "`, or choose another run.name (--set run.name=...)");
  }
  if (!exists && resume) return NotFound("cannot resume: run directory " + rd.path_ + " not found");
  for (const std::string& d : {rd.path_, rd.logs_dir(), rd.checkpoints_dir(),
                               rd.tensorboard_dir()}) {
    fs::create_directories(d, ec);
    if (ec) return Internal("create " + d + ": " + ec.message());
  }
  return rd;
}

Status RunDirectory::WriteConfig(const std::string& yaml) const {
  return WriteFileAtomic(config_path(), yaml);
}

}  // namespace allot
