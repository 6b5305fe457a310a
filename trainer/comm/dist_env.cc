#include "trainer/comm/dist_env.h"

#include <charconv>
#include <cstdlib>

namespace allot::trainer::comm {
namespace {

Result<int> ParseInt(const std::string& name, const std::string& text, int min, int max) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return InvalidArgument(name + "='" + text + "': not an integer");
  }
  if (value < min || value > max) {
    return InvalidArgument(name + "=" + text + ": must be in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  }
  return value;
}

}  // namespace

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<DistEnv> ReadDistEnv(const EnvLookup& lookup) {
  DistEnv env;
  const auto world = lookup("WORLD_SIZE");
  if (!world.has_value()) return env;
  ALLOT_ASSIGN_OR_RETURN(env.world_size, ParseInt("WORLD_SIZE", *world, 1, 1 << 20));
  if (env.world_size == 1) return env;

  const auto rank = lookup("RANK");
  if (!rank.has_value()) return InvalidArgument("WORLD_SIZE=" + *world + " but RANK is not set");
  ALLOT_ASSIGN_OR_RETURN(env.rank, ParseInt("RANK", *rank, 0, env.world_size - 1));
  if (const auto local = lookup("LOCAL_RANK"); local.has_value()) {
    ALLOT_ASSIGN_OR_RETURN(env.local_rank, ParseInt("LOCAL_RANK", *local, 0, env.world_size - 1));
  } else {
    env.local_rank = env.rank;
  }
  const auto addr = lookup("MASTER_ADDR");
  if (!addr.has_value() || addr->empty()) {
    return InvalidArgument("WORLD_SIZE=" + *world + " but MASTER_ADDR is not set");
  }
  env.master_addr = *addr;
  if (const auto port = lookup("MASTER_PORT"); port.has_value()) {
    ALLOT_ASSIGN_OR_RETURN(env.master_port, ParseInt("MASTER_PORT", *port, 1, 65535));
  }
  return env;
}

}  // namespace allot::trainer::comm
