#include "envs/r2/grouped_search.h"

#include <array>
#include <optional>

namespace allot::envs::r2 {
namespace {

constexpr std::array<const char*, 3> kGroups = {"SLM", "MLM", "LLM"};

struct Position {
  int group = 0;  // index into kGroups
  int index = 0;  // within the group, smallest first
};

}  // namespace

Result<SearchResult> GroupedSearch(const std::vector<Difficulty>& difficulties,
                                   const std::vector<PoolModel>& pool, const AccuracyFn& accuracy,
                                   const GroupedSearchConfig& config) {
  if (difficulties.empty()) return InvalidArgument("grouped search: no subtasks");
  // Eq. 8: the groups, each in pool order.
  std::array<std::vector<std::string>, 3> groups;
  for (const PoolModel& m : pool) {
    bool known = false;
    for (size_t g = 0; g < kGroups.size(); ++g) {
      if (m.group == kGroups[g]) {
        groups[g].push_back(m.name);
        known = true;
      }
    }
    if (!known) {
      return InvalidArgument("grouped search: model '" + m.name + "' has group '" + m.group +
                             "' (SLM, MLM or LLM)");
    }
  }
  auto size = [&](int g) { return static_cast<int>(groups[g].size()); };
  if (size(0) + size(1) + size(2) == 0) return InvalidArgument("grouped search: empty pool");

  // M_A,0: the group's medium model; an empty group defers to the nearest, larger first.
  std::vector<Position> pos;
  for (Difficulty d : difficulties) {
    const int want = static_cast<int>(d);
    int g = want;
    for (int delta : {0, 1, -1, 2, -2}) {
      const int c = want + delta;
      if (c >= 0 && c < 3 && size(c) > 0) {
        g = c;
        break;
      }
    }
    pos.push_back({g, (size(g) - 1) / 2});
  }
  auto models = [&](const std::vector<Position>& p) {
    std::vector<std::string> out;
    for (const Position& x : p) out.push_back(groups[x.group][x.index]);
    return out;
  };
  auto rank = [&](const Position& p) {
    int r = p.index;
    for (int g = 0; g < p.group; ++g) r += size(g);
    return r;
  };

  SearchResult result;
  std::optional<std::vector<Position>> best;
  std::vector<bool> settled(pos.size(), false);  // a smaller model broke the answer
  int last_moved = -1;
  // The next within-group downgrade from `from`: the subtask on the largest model that can
  // still go down. False when none can.
  auto downgrade = [&](std::vector<Position>& from) {
    int pick = -1;
    for (size_t i = 0; i < from.size(); ++i) {
      if (settled[i] || from[i].index == 0) continue;
      if (pick < 0 || rank(from[i]) > rank(from[pick])) pick = static_cast<int>(i);
    }
    if (pick < 0) return false;
    from[pick].index -= 1;
    last_moved = pick;
    return true;
  };

  while (result.iterations < config.max_iterations) {
    const std::vector<std::string> current = models(pos);
    Result<bool> ok = accuracy(current);
    if (!ok.ok())
      return ok.status().Annotate("grouped search, iteration " +
                                  std::to_string(result.iterations + 1));
    result.iterations += 1;
    result.trace.push_back({current, *ok});
    if (*ok) {
      best = pos;
      if (!downgrade(pos)) break;  // Acc = 1 with minimal resource usage
      continue;
    }
    if (best) {
      // The last downgrade broke the answer: that subtask keeps its model.
      pos = *best;
      settled[last_moved] = true;
      if (!downgrade(pos)) break;
      continue;
    }
    // Eq. 9: every subtask one model up within its group.
    bool moved = false;
    for (Position& p : pos) {
      if (p.index + 1 < size(p.group)) {
        p.index += 1;
        moved = true;
      }
    }
    if (moved) continue;
    // Eq. 10: every group exhausted; the next larger non-empty group's smallest model.
    for (Position& p : pos) {
      for (int g = p.group + 1; g < 3; ++g) {
        if (size(g) > 0) {
          p = {g, 0};
          moved = true;
          break;
        }
      }
    }
    if (!moved) break;  // everything on the largest model, still wrong
  }
  result.correct = best.has_value();
  result.allocation = best ? models(*best) : models(pos);
  return result;
}

}  // namespace allot::envs::r2
