// Fuzzes checkpoint manifest.json parsing: any bytes must parse or fail with DataLoss (the
// checkpoint is then skipped), and a parsed manifest never names a file outside its directory.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/checkpoint_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = allot::ParseCheckpointManifest(text, "step-1/manifest.json");
  if (!m.ok()) {
    if (m.status().code() != allot::StatusCode::kDataLoss) std::abort();
    return 0;
  }
  for (const auto& f : m->files) {
    if (f.name.empty() || f.name[0] == '/' || f.name.find("..") != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}
