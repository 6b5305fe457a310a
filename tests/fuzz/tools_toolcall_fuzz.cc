// libFuzzer target: parsing an LLM's tool call and validating it against the registered
// schemas must never crash or throw. The calculator and statistics tools run for real (they
// are bounded); the sandbox and the knowledge base are left out.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tools/calculator_tools.h"
#include "tools/tool_registry.h"

namespace {

const allot::tools::ToolRegistry& Registry() {
  static auto* registry = [] {
    auto* r = new allot::tools::ToolRegistry();
    (void)allot::tools::RegisterArithmeticTools(*r);
    (void)allot::tools::RegisterStatisticsTools(*r);
    return r;
  }();
  return *registry;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto call = allot::tools::ParseToolCall(text);
  if (call.ok()) {
    allot::tools::ToolResult r = Registry().Call(*call);
    (void)r.Render();
  }
  return 0;
}
