#include "envs/deeptool/mosaic.h"

#include <cctype>
#include <fstream>

#include "core/random.h"
#include "envs/deeptool/step_instances.h"

namespace allot::envs::deeptool {
namespace {

// A draw that depends only on (seed, trajectory, step, purpose).
uint64_t Draw(uint64_t seed, uint64_t index, uint64_t step, uint64_t purpose) {
  return SplitMix64Hash(SplitMix64Hash(SplitMix64Hash(SplitMix64Hash(seed) ^ index) ^ step) ^
                        purpose);
}

double Unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The code with its last ')' removed (an unclosed call), when it has one.
std::string DropLastParen(const std::string& code) {
  size_t p = code.rfind(')');
  if (p == std::string::npos) return "";
  return code.substr(0, p) + code.substr(p + 1);
}

// The first call of a name followed by '(' misspelt by dropping its last letter (NameError).
std::string MisspellCall(const std::string& code) {
  for (size_t p = code.find('('); p != std::string::npos; p = code.find('(', p + 1)) {
    size_t b = p;
    while (b > 0 && IsIdentChar(code[b - 1])) --b;
    if (p - b >= 3 && std::isalpha(static_cast<unsigned char>(code[b])) != 0) {
      return code.substr(0, p - 1) + code.substr(p);
    }
  }
  return "";
}

// The first block opener (a line ending in ':') without its colon (SyntaxError).
std::string DropColon(const std::string& code) {
  if (size_t p = code.find(":\n"); p != std::string::npos) {
    return code.substr(0, p) + code.substr(p + 1);
  }
  if (!code.empty() && code.back() == ':') return code.substr(0, code.size() - 1);
  return "";
}

// An extra indent on the last non-empty line that is not itself indented (IndentationError).
std::string BreakIndent(const std::string& code) {
  size_t end = code.size();
  while (end > 0) {
    size_t begin = code.rfind('\n', end - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    if (end > begin && code[begin] != ' ' && code[begin] != '\t' && code[begin] != '#') {
      if (begin == 0)
        return "";  // a one-line program: indenting it is still a syntax error,
                    // but the unclosed-paren and colon mutations read better
      return code.substr(0, begin) + "    " + code.substr(begin);
    }
    if (begin == 0) break;
    end = begin - 1;
  }
  return "";
}

}  // namespace

std::vector<std::string> CorruptedCandidates(const std::string& code, uint64_t r) {
  std::vector<std::string> pool;
  for (std::string c :
       {DropLastParen(code), MisspellCall(code), DropColon(code), BreakIndent(code)}) {
    if (!c.empty() && c != code) pool.push_back(std::move(c));
  }
  std::vector<std::string> out;
  if (!pool.empty()) {
    const size_t first = static_cast<size_t>(r % pool.size());
    for (size_t i = 0; i < pool.size(); ++i) out.push_back(pool[(first + i) % pool.size()]);
  }
  // Always a syntax error: an opening parenthesis that is never closed.
  out.push_back(code + "\nprint((");
  return out;
}

Result<ExpertTrajectory> Perturb(const ExpertTrajectory& t, uint64_t index,
                                 const MosaicConfig& config, const CodeRunner& run,
                                 MosaicStats* stats) {
  if (config.probability < 0.0 || config.probability > 1.0) {
    return InvalidArgument("mosaic probability " + std::to_string(config.probability) +
                           " is outside [0, 1]");
  }
  if (config.extrinsic_failures.empty()) {
    return InvalidArgument("mosaic: no extrinsic failure messages");
  }
  ExpertTrajectory out = t;
  out.steps.clear();
  if (stats != nullptr) ++stats->trajectories;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const ExpertStep& step = t.steps[k];
    if (step.terminal || !step.perturbation.empty()) {
      out.steps.push_back(step);
      continue;
    }
    if (stats != nullptr) ++stats->code_steps;
    if (Unit(Draw(config.seed, index, k, 1)) >= config.probability) {
      out.steps.push_back(step);
      continue;
    }
    ExpertStep failed = step;
    ExpertStep recovery = step;
    if (Unit(Draw(config.seed, index, k, 2)) < config.intrinsic_share) {
      // Eq. 3: a corrupted action whose observation is the real traceback.
      failed.perturbation = "intrinsic";
      bool found = false;
      for (const std::string& c :
           CorruptedCandidates(step.action, Draw(config.seed, index, k, 3))) {
        ALLOT_ASSIGN_OR_RETURN(CodeOutcome o, run(c));
        if (o.ok) continue;
        failed.action = c;
        failed.observation = o.observation;
        found = true;
        break;
      }
      if (!found) {
        return Internal("mosaic: trajectory " + t.id + " step " + std::to_string(k + 1) +
                        ": no corrupted version of the code failed when run");
      }
      recovery.think = config.intrinsic_note + "\n" + step.think;
      if (stats != nullptr) ++stats->intrinsic;
    } else {
      // Eq. 4: the action is kept; the environment fails.
      failed.perturbation = "extrinsic";
      const auto& msgs = config.extrinsic_failures;
      failed.observation = msgs[Draw(config.seed, index, k, 4) % msgs.size()];
      recovery.think = config.extrinsic_note + "\n" + step.think;
      if (stats != nullptr) ++stats->extrinsic;
    }
    out.steps.push_back(std::move(failed));
    out.steps.push_back(std::move(recovery));
  }
  return out;
}

Result<MosaicStats> WritePerturbed(const std::string& in_path, const std::string& out_path,
                                   const MosaicConfig& config, const CodeRunner& run) {
  ALLOT_ASSIGN_OR_RETURN(std::vector<ExpertTrajectory> trajectories,
                         ReadExpertTrajectories(in_path));
  std::ofstream out(out_path);
  if (!out) return InvalidArgument(out_path + ": cannot write");
  MosaicStats stats;
  for (size_t i = 0; i < trajectories.size(); ++i) {
    ALLOT_ASSIGN_OR_RETURN(ExpertTrajectory p, Perturb(trajectories[i], i, config, run, &stats));
    out << TrajectoryToJson(p).dump() << "\n";
  }
  out.flush();
  if (!out) return Internal(out_path + ": write failed");
  return stats;
}

}  // namespace allot::envs::deeptool
