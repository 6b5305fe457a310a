// The torchrun-style environment of a learner rank: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT (the variables torchrun, SLURM wrappers and Kubernetes manifests set; see
// docs/launch/). With none of them set the process is a world of one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace allot::trainer::comm {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // torchrun's default

  bool is_rank0() const { return rank == 0; }
  bool distributed() const { return world_size > 1; }
};

// Looks a variable up (nullopt when unset). The default reads the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> ProcessEnv(const std::string& name);

// Parses the variables. WORLD_SIZE unset (or 1) is a world of one, whatever else is set; with
// WORLD_SIZE > 1, RANK and MASTER_ADDR are required and MASTER_PORT defaults to 29500. Errors
// name the variable and its value.
Result<DistEnv> ReadDistEnv(const EnvLookup& lookup = ProcessEnv);

}  // namespace allot::trainer::comm
