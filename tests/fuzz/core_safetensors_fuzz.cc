// Fuzzes the safetensors header parser: any byte string must parse or fail cleanly, and a
// successful parse must only hand out spans inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto view = allot::safetensors::View::Parse(bytes, "fuzz");
  if (!view.ok()) return 0;
  for (const auto& t : view->tensors()) {
    auto span = view->Data(t);
    if (span.size() != t.nbytes()) std::abort();
    if (!span.empty() && (span.data() < bytes.data() ||
                          span.data() + span.size() > bytes.data() + bytes.size())) {
      std::abort();
    }
  }
  return 0;
}
