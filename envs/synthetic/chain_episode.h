// The one episode loop over the chain MDP, shared by the chain rollout env, the single-process
// DQN trainer, the greedy probe and `allot eval`: choose a block in the state, act, report the
// step, until the episode is done (the MDP forces Terminate after max_steps blocks).
#pragma once

#include <functional>

#include "envs/synthetic/chain_mdp.h"

namespace allot::envs {

struct ChainEpisodeStep {
  ChainMdp::State state{};  // where the block was chosen
  int chosen = 0;           // what the chooser picked
  ChainMdp::Step step;      // applied block, reward, next state, done
};

// Runs one episode from Reset(). `choose` picks a block; `on_step` (may be empty) sees every
// step; `stop` (may be empty) ends the episode early when it returns true before a choice (a
// cancelled rollout). Returns the undiscounted return.
inline double RunChainEpisode(ChainMdp& mdp,
                              const std::function<int(const ChainMdp::State&)>& choose,
                              const std::function<void(const ChainEpisodeStep&)>& on_step = {},
                              const std::function<bool()>& stop = {}) {
  ChainMdp::State state = mdp.Reset();
  double ret = 0;
  for (bool done = false; !done;) {
    if (stop && stop()) break;
    ChainEpisodeStep s;
    s.state = state;
    s.chosen = choose(state);
    s.step = mdp.Act(s.chosen);
    ret += s.step.reward;
    if (on_step) on_step(s);
    state = s.step.next_state;
    done = s.step.done;
  }
  return ret;
}

}  // namespace allot::envs
