// What the `allot eval` commands of the LLM envs share: the --method list and the --json file
// (one JSON array of the methods' results).
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace allot::envs::runtime {

// "a,b" -> {"a", "b"}; "" or "all" -> {} (the env's every method).
inline std::vector<std::string> ParseEvalMethods(const std::string& method) {
  std::vector<std::string> methods;
  if (method.empty() || method == "all") return methods;
  std::stringstream ss(method);
  for (std::string m; std::getline(ss, m, ',');) methods.push_back(m);
  return methods;
}

// Writes each result's ToJson() into one JSON array at `path`.
template <typename MethodResult>
Status WriteEvalJson(const std::vector<MethodResult>& results, const std::string& path) {
  nlohmann::json j = nlohmann::json::array();
  for (const MethodResult& r : results) j.push_back(r.ToJson());
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) return Unavailable(path + ": cannot write");
  return Status::Ok();
}

}  // namespace allot::envs::runtime
