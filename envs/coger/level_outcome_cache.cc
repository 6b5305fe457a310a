#include "envs/coger/level_outcome_cache.h"

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/sha256.h"

namespace allot::envs::coger {

Result<std::unique_ptr<LevelOutcomeCache>> LevelOutcomeCache::Open(const std::string& path) {
  auto cache = std::unique_ptr<LevelOutcomeCache>(new LevelOutcomeCache(path));
  if (path.empty()) return cache;
  std::ifstream in(path);
  if (!in) return cache;  // created on the first Put
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string() ||
        !j.contains("level") || !j["level"].is_number_integer() || !j.contains("correct") ||
        !j["correct"].is_boolean()) {
      if (in.peek() == std::char_traits<char>::eof()) break;  // torn last line
      return DataLoss(path + ":" + std::to_string(line_no) +
                      ": not a {key, level, correct} record");
    }
    cache->outcomes_[{j["key"].get<std::string>(), j["level"].get<int>()}] =
        j["correct"].get<bool>();
  }
  return cache;
}

std::string LevelOutcomeCache::Key(const std::string& question, const std::string& reference) {
  std::string bytes = question;
  bytes.push_back('\0');
  bytes += reference;
  return Sha256Hex(bytes);
}

std::optional<bool> LevelOutcomeCache::Get(const std::string& key, int level) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = outcomes_.find({key, level});
  if (it == outcomes_.end()) return std::nullopt;
  return it->second;
}

Status LevelOutcomeCache::Put(const std::string& key, int level, bool correct) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = outcomes_.insert({{key, level}, correct});
  if (!inserted) return Status::Ok();
  if (path_.empty()) return Status::Ok();
  std::ofstream out(path_, std::ios::app);
  if (!out) return Unavailable("L_min cache '" + path_ + "': cannot append");
  out << nlohmann::json{{"key", key}, {"level", level}, {"correct", correct}}.dump() << "\n";
  out.flush();
  if (!out) return Unavailable("L_min cache '" + path_ + "': write failed");
  return Status::Ok();
}

size_t LevelOutcomeCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcomes_.size();
}

}  // namespace allot::envs::coger
