// SHA-256 digests (OpenSSL's libcrypto) for checkpoint manifests and shipped artefacts.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace allot {

// The 32 raw digest bytes (the rollout protocol's chunk checksums).
std::string Sha256Raw(std::string_view bytes);
// The same digest as 64 lower-case hex digits (checkpoint manifests).
std::string Sha256Hex(std::string_view bytes);
// Streams the file; never loads it whole.
Result<std::string> Sha256File(const std::string& path);

}  // namespace allot
