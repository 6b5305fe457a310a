// Crash-safe file writes: write a temporary file next to the target, fsync it, rename it over
// the target, fsync the directory. A reader sees the old file or the new one, never a torn one.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace allot {

Status WriteFileAtomic(const std::string& path, std::string_view contents);
Status ReadFile(const std::string& path, std::string* contents);
// fsyncs a file or a directory by path.
Status FsyncPath(const std::string& path);

}  // namespace allot
