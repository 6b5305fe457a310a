#include "apps/coger_table.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/progress_bar.h"
#include "core/run_plots.h"
#include "datasets/jsonl_loader.h"
#include "envs/coger/coger_eval.h"

namespace allot::apps {
namespace fs = std::filesystem;
using envs::coger::CogerMethodResult;

namespace {

// Each method runs over this many interleaved shards of the items at once: the servers batch
// their requests (CogER's eval asks one item at a time), and each shard draws its own random
// routing from the seed.
constexpr size_t kShards = 3;

struct Row {
  std::string label;  // "fixed L1", "router (trained)", ...
  std::string phase;  // "before" or "after" training
  CogerMethodResult result;
};

void Merge(const CogerMethodResult& part, CogerMethodResult& into) {
  into.episodes += part.episodes;
  into.correct += part.correct;
  into.failed += part.failed;
  into.cost_usd += part.cost_usd;
  into.energy_j += part.energy_j;
  into.latency_s += part.latency_s;
  into.llm_calls += part.llm_calls;
  into.tokens += part.tokens;
  for (size_t k = 0; k < into.levels.size(); ++k) into.levels[k] += part.levels[k];
  for (const auto& [reason, n] : part.failures) into.failures[reason] += n;
  into.items.insert(into.items.end(), part.items.begin(), part.items.end());
}

std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

double PerQuery(double total, int64_t n) { return n > 0 ? total / static_cast<double>(n) : 0.0; }

// Uniform random routing's expectation on these items: every fixed level answered every item
// greedily, so the expected accuracy, cost and energy are the means over L1..L4 (one seeded draw
// of a few dozen queries is noisy; "random (one draw)" is that draw). Empty without the four.
struct Expectation {
  int64_t n = 0;
  double accuracy = 0, failed = 0, cost = 0, energy = 0;
};
std::optional<Expectation> ExpectedRandom(const std::vector<Row>& rows) {
  std::vector<const CogerMethodResult*> fixed;
  for (const Row& r : rows) {
    if (r.label.rfind("fixed L", 0) == 0) fixed.push_back(&r.result);
  }
  if (fixed.size() != 4) return std::nullopt;
  Expectation e;
  e.n = fixed[0]->episodes;
  for (const CogerMethodResult* f : fixed) {
    if (f->episodes != e.n) return std::nullopt;
    e.accuracy += f->accuracy() / 4;
    e.failed += static_cast<double>(f->failed) / 4;
    e.cost += PerQuery(f->cost_usd, e.n) / 4;
    e.energy += PerQuery(f->energy_j, e.n) / 4;
  }
  return e;
}

std::string ExpectationLine(const Expectation& e) {
  return Format("%-20s %4lld %8.3f %6lld %13.3e %14.3e  -/-/-/-", "random (expected)",
                static_cast<long long>(e.n), e.accuracy,
                static_cast<long long>(std::nearbyint(e.failed)), e.cost, e.energy);
}

std::string RowLine(const Row& row) {
  const CogerMethodResult& r = row.result;
  return Format("%-20s %4lld %8.3f %6lld %13.3e %14.3e  %lld/%lld/%lld/%lld", row.label.c_str(),
                static_cast<long long>(r.episodes), r.accuracy(), static_cast<long long>(r.failed),
                PerQuery(r.cost_usd, r.episodes), PerQuery(r.energy_j, r.episodes),
                static_cast<long long>(r.levels[1]), static_cast<long long>(r.levels[2]),
                static_cast<long long>(r.levels[3]), static_cast<long long>(r.levels[4]));
}

// Per item difficulty (the items' "difficulty" field): each row's correct count, and where the
// routing rows sent the items.
std::vector<std::string> ByDifficulty(const std::vector<Row>& rows) {
  std::vector<std::string> kinds;
  for (const Row& r : rows) {
    for (const auto& it : r.result.items) {
      if (!it.difficulty.empty() &&
          std::find(kinds.begin(), kinds.end(), it.difficulty) == kinds.end()) {
        kinds.push_back(it.difficulty);
      }
    }
  }
  if (kinds.empty()) return {};
  std::vector<std::string> out = {
      "", "per difficulty: correct/items, and where routing sent them (L1-L2-L3-L4)"};
  std::string header = Format("%-20s", "method");
  for (const std::string& k : kinds) header += Format(" %15s", k.c_str());
  out.push_back(header);
  for (const Row& r : rows) {
    const bool routed = r.result.method == "router" || r.result.method == "random";
    std::string line = Format("%-20s", r.label.c_str());
    for (const std::string& k : kinds) {
      int64_t n = 0, correct = 0, level[5] = {0, 0, 0, 0, 0};
      for (const auto& it : r.result.items) {
        if (it.difficulty != k) continue;
        ++n;
        correct += it.correct ? 1 : 0;
        ++level[it.level];
      }
      std::string cell =
          Format("%lld/%lld", static_cast<long long>(correct), static_cast<long long>(n));
      if (routed) {
        cell += Format(" %lld-%lld-%lld-%lld", static_cast<long long>(level[1]),
                       static_cast<long long>(level[2]), static_cast<long long>(level[3]),
                       static_cast<long long>(level[4]));
      }
      line += Format(" %15s", cell.c_str());
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace

std::string PrepareTrainedRouter(LoadedConfig& loaded, const std::string& run_dir) {
  std::error_code ec;
  int newest = -1;
  for (const auto& entry : fs::directory_iterator(fs::path(run_dir) / "adapters", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 2 || name[0] != 'v' ||
        !std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    if (fs::is_regular_file(entry.path() / "adapter_config.json", ec)) {
      newest = std::max(newest, std::stoi(name.substr(1)));
    }
  }
  if (newest < 0) return "";
  // Adapters are served as "<run name>-v<N>" (engine_grpo.cc).
  const std::string run_name = fs::path(run_dir).lexically_normal().filename().string();
  const std::string adapter = run_name + "-v" + std::to_string(newest);
  const std::string& router = loaded.config.env.coger.router_endpoint;
  for (LocalEndpoint& e : loaded.local.endpoints) {
    if (e.name != router) continue;
    const fs::path dir =
        fs::absolute(fs::path(run_dir) / "adapters" / ("v" + std::to_string(newest)), ec);
    e.serve.adapters.push_back(adapter + "=" + dir.lexically_normal().string());
  }
  return adapter;
}

int RunCogerTable(const AllotConfig& cfg, const CogerTableOptions& options, std::ostream& out,
                  std::ostream& err) {
  auto fail = [&](const Status& s) {
    err << "allot eval: " << s.ToString() << "\n";
    return 1;
  };
  if (cfg.eval_data.path.empty()) return fail(InvalidArgument("eval_data.path: empty"));
  Result<datasets::Dataset> ds = datasets::LoadJsonl(cfg.eval_data);
  if (!ds.ok()) return fail(ds.status().Annotate("eval_data"));
  std::vector<datasets::Example> examples = ds->examples;
  if (options.limit > 0 && examples.size() > static_cast<size_t>(options.limit)) {
    examples.resize(static_cast<size_t>(options.limit));
  }
  if (examples.empty()) return fail(InvalidArgument("eval_data: no examples"));
  std::vector<std::vector<datasets::Example>> shards(std::min(kShards, examples.size()));
  for (size_t i = 0; i < examples.size(); ++i) shards[i % shards.size()].push_back(examples[i]);

  struct Job {
    std::string label, phase, method, adapter;
  };
  std::vector<Job> jobs = {{"fixed L1", "before", "L1", ""},
                           {"fixed L2", "before", "L2", ""},
                           {"fixed L3", "before", "L3", ""},
                           {"fixed L4", "before", "L4", ""},
                           {"random (one draw)", "before", "random", ""},
                           {"router (untrained)", "before", "router", ""}};
  if (!options.trained_adapter.empty()) {
    jobs.push_back({"router (trained)", "after", "router", options.trained_adapter});
  }
  const envs::coger::CogerEnvConfig config{cfg.env.coger, cfg.endpoints, cfg.gpu, cfg.rewards,
                                           cfg.tools};
  std::vector<std::vector<std::future<Result<std::vector<CogerMethodResult>>>>> running(
      jobs.size());
  // Every row's items on one bar: each evaluation adds its items when it starts.
  ProgressBar progress(0, "eval coger table: items", stderr);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (const auto& shard : shards) {
      envs::coger::CogerEvalOptions o;
      o.methods = {jobs[j].method};
      o.seed = options.seed;
      o.adapter = jobs[j].adapter;
      o.progress = &progress;
      running[j].push_back(std::async(std::launch::async, [&config, &shard, o] {
        return envs::coger::RunCogerEval(config, shard, o);
      }));
    }
  }
  std::vector<Row> rows;
  Status first_error = Status::Ok();
  for (size_t j = 0; j < jobs.size(); ++j) {
    Row row{jobs[j].label, jobs[j].phase, {}};
    row.result.method = jobs[j].method;
    for (auto& f : running[j]) {
      auto part = f.get();
      if (!part.ok()) {
        if (first_error.ok()) first_error = part.status().Annotate(jobs[j].label);
        continue;
      }
      for (const CogerMethodResult& r : *part) Merge(r, row.result);
    }
    rows.push_back(std::move(row));
  }
  progress.Finish();
  if (!first_error.ok()) return fail(first_error);

  // No latency column: the rows ran at once against the same servers.
  std::vector<std::string> lines = {Format("%-20s %4s %8s %6s %13s %14s  levels L1/L2/L3/L4",
                                           "method", "n", "accuracy", "failed", "cost $/query",
                                           "energy J/query")};
  const std::optional<Expectation> expected = ExpectedRandom(rows);
  for (const Row& r : rows) {
    if (r.label == "random (one draw)" && expected) lines.push_back(ExpectationLine(*expected));
    lines.push_back(RowLine(r));
  }
  for (const std::string& l : ByDifficulty(rows)) lines.push_back(l);
  for (const std::string& l : lines) out << l << "\n";
  out << "(means per query over " << examples.size()
      << " test items; cost from the pool's prices, energy from FLOPs on the recipe's GPU "
         "profile)\n";
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json one = r.result.ToJson();
    one["label"] = r.label;
    one["phase"] = r.phase;
    j.push_back(std::move(one));
  }
  if (expected) {
    j.push_back({{"label", "random (expected)"},
                 {"phase", "before"},
                 {"method", "random"},
                 {"expectation", true},
                 {"episodes", expected->n},
                 {"accuracy", expected->accuracy},
                 {"mean_cost_usd", expected->cost},
                 {"mean_energy_j", expected->energy}});
  }
  if (!options.json_path.empty()) {
    std::ofstream f(options.json_path);
    f << j.dump(2) << "\n";
    if (!f) return fail(Unavailable(options.json_path + ": cannot write"));
  }
  // The cost-accuracy plane next to the JSON, else in the run's directory (core/run_plots.h).
  const std::filesystem::path run_dir = std::filesystem::path(cfg.run.output_dir) / cfg.run.name;
  const std::string plot_dir = !options.json_path.empty()
                                   ? std::filesystem::path(options.json_path).parent_path().string()
                                   : run_dir.string();
  if (std::filesystem::is_directory(plot_dir.empty() ? "." : plot_dir)) {
    auto plot = PlotCostAccuracy(j, plot_dir.empty() ? "." : plot_dir);
    if (!plot.ok()) {
      err << "no cost-accuracy plot: " << plot.status().message() << "\n";
    } else if (plot->rendered) {
      out << "plot: " << plot->png << "\n";
    } else {
      out << "plot not rendered (gnuplot missing or failed): gnuplot " << plot->script << "\n";
    }
  }
  return 0;
}

}  // namespace allot::apps
