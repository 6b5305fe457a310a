// Built instead of navigator_onnx.cc when ALLOT_WITH_ONNX is off or libonnx is missing.
#include "trainer/dqn/navigator_onnx.h"

namespace allot::trainer {
namespace {
Status Missing() {
  return Unimplemented("onnx: this allot was built without libonnx (cmake -DALLOT_WITH_ONNX=ON)");
}
}  // namespace

bool OnnxExportAvailable() { return false; }
Result<std::string> BuildNavigatorOnnx(const NavigatorWeights&) { return Missing(); }
Status CheckNavigatorOnnx(const std::string&, const std::string&) { return Missing(); }
Result<std::vector<float>> EvalNavigatorOnnx(const std::string&, std::span<const float>, int) {
  return Missing();
}

}  // namespace allot::trainer
