// What the `allot eval` commands of the LLM envs share: the --method list, the eval_data load
// and the --json file (one JSON array of the methods' results).
#pragma once

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasets/jsonl_loader.h"

namespace allot::envs::runtime {

// "a,b" -> {"a", "b"}; "" or "all" -> {} (the env's every method).
inline std::vector<std::string> ParseEvalMethods(const std::string& method) {
  std::vector<std::string> methods;
  if (method.empty() || method == "all") return methods;
  std::stringstream ss(method);
  for (std::string m; std::getline(ss, m, ',');) methods.push_back(m);
  return methods;
}

// The example's "difficulty" field (the tiny world's, for per-difficulty tables), or "" when it
// has none or it is not a string.
inline std::string ExampleDifficulty(const datasets::Example& e) {
  const auto d = e.extra.find("difficulty");
  return d != e.extra.end() && d->is_string() ? d->get<std::string>() : std::string();
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

// The body of an env's `allot eval` command: loads eval_data, runs `run(examples)` (a
// Result<std::vector<MethodResult>>), prints the table with `print(results, out)` and writes
// --json. Returns the exit code; every error goes to `err` as one "allot eval: ..." line.
template <typename Run, typename Print>
int RunEvalCommand(const datasets::DatasetConfig& data, const std::string& json_path,
                   std::ostream& out, std::ostream& err, Run&& run, Print&& print) {
  auto fail = [&](const Status& s) {
    err << "allot eval: " << s.ToString() << "\n";
    return 1;
  };
  if (data.path.empty()) return fail(InvalidArgument("eval_data.path: empty"));
  Result<datasets::Dataset> ds = datasets::LoadJsonl(data);
  if (!ds.ok()) return fail(ds.status().Annotate("eval_data"));
  auto results = run(ds->examples);
  if (!results.ok()) return fail(results.status());
  print(*results, out);
  if (!json_path.empty()) {
    if (Status st = WriteEvalJson(*results, json_path); !st.ok()) return fail(st);
  }
  return 0;
}

}  // namespace allot::envs::runtime
