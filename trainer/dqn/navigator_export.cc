#include "trainer/dqn/navigator_export.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "trainer/dqn/navigator_onnx.h"

namespace allot::trainer {

std::string NavigatorSpecJson(const NavigatorWeights& w) {
  nlohmann::ordered_json spec;
  spec["format"] = "allot-navigator/1";
  spec["architecture"] =
      "dueling MLP (RLoT Section 4.2): x' = (x - input.offset) / input.scale; "
      "h = relu(trunk(x')); A = adv_out(relu(adv_hidden(h))); V = "
      "value_out(relu(value_hidden(h))); "
      "Q = V + A - mean(A). Linear layers are y = x W^T + b with W of shape [out, in].";
  spec["state_dim"] = w.shape.state_dim;
  spec["num_actions"] = w.shape.num_actions;
  spec["hidden"] = w.shape.hidden;
  spec["parameters"] = w.parameter_count();
  spec["input"] = {{"dtype", "float32"},
                   {"shape", {"batch", w.shape.state_dim}},
                   {"offset", w.shape.input_offset},
                   {"scale", w.shape.input_scale}};
  spec["output"] = {{"name", "q_values"}, {"shape", {"batch", w.shape.num_actions}}};
  spec["actions"] = NavigatorActionNames(w.shape.num_actions);
  if (w.shape.state_dim == 7) {
    // RLoT Section 3.2: the self-evaluation aspects, each 0 (not involved), 1 False, 2 Unsure, 3
    // True.
    spec["state_features"] = {"A1", "A2", "A3", "B1", "B2", "C1", "C2"};
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const auto& t : w.tensors) tensors[t.name] = {{"dtype", "F32"}, {"shape", t.shape}};
  spec["tensors"] = tensors;
  spec["source"] = w.source;
  return spec.dump(2) + "\n";
}

Result<std::vector<std::string>> ExportNavigator(const std::string& run_dir_or_checkpoint,
                                                 const std::string& format,
                                                 const std::string& out_dir) {
  if (format != "onnx" && format != "safetensors") {
    return InvalidArgument("--format: '" + format + "' is not one of onnx, safetensors");
  }
  ALLOT_ASSIGN_OR_RETURN(NavigatorWeights w, LoadNavigatorWeights(run_dir_or_checkpoint));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return InvalidArgument(out_dir + ": cannot create: " + ec.message());
  std::vector<std::string> written;
  if (format == "onnx") {
    ALLOT_ASSIGN_OR_RETURN(std::string model, BuildNavigatorOnnx(w));
    const std::string path = out_dir + "/navigator.onnx";
    ALLOT_RETURN_IF_ERROR(CheckNavigatorOnnx(model, path));
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(path, model));
    written.push_back(path);
  } else {
    ALLOT_ASSIGN_OR_RETURN(std::string bytes, w.Serialize());
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/navigator.safetensors", bytes));
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/navigator.json", NavigatorSpecJson(w)));
    written.push_back(out_dir + "/navigator.safetensors");
    written.push_back(out_dir + "/navigator.json");
  }
  return written;
}

int RunExport(const std::string& run_dir_or_checkpoint, const std::string& format,
              const std::string& out_dir) {
  auto written = ExportNavigator(run_dir_or_checkpoint, format, out_dir);
  if (!written.ok()) {
    std::cerr << "allot export: " << written.status().message() << "\n";
    return 1;
  }
  for (const auto& p : *written) std::cout << "wrote " << p << "\n";
  return 0;
}

}  // namespace allot::trainer
