// The dqn section: Double-Dueling DQN for the RLoT navigator. Every default is RLoT's
// (Table 21 and the authors' public code, see notes.md).
#pragma once

#include <string>
#include <vector>

#include "core/config/schema.h"

namespace allot::trainer {

struct DqnConfig {
  // Network (RLoT Section 4.2: 7 -> 32, dueling heads 32-32-5 and 32-32-1).
  int state_dim = 7;
  int num_actions = 5;
  int hidden = 32;

  double gamma = 0.9;
  double lr = 0.01;
  double lr_decay = 0.5;  // multiplied in every lr_decay_episodes
  int lr_decay_episodes = 1000;
  int batch_size = 64;
  int replay_capacity = 500;
  int learn_start = 500;  // RLoT starts learning once the buffer is full
  double epsilon_start = 1.0;
  double epsilon_decay = 0.9995;  // per env step
  double epsilon_min = 0.0;
  int target_update_every = 50;  // updates between hard target copies
  std::string loss = "mse";
  bool double_q = true;
  int updates_per_step = 1;

  // Off by default, so that RLoT's defaults are reproduced exactly.
  int n_step = 1;
  bool prioritized_replay = false;
  double priority_alpha = 0.6;
  double priority_beta = 0.4;
  double priority_eps = 1e-6;

  // Actor/learner split (Ape-X, Horgan et al. 2018): rollout workers act with the navigator
  // the learner publishes every `publish_every` updates; transitions stream back into replay.
  // Off by default: small jobs act and learn in one process (and resume bit for bit). The
  // workers come from the rollout section (in_process_workers, dispatcher.workers).
  bool distributed = false;
  int publish_every = 10;
  int episodes_in_flight = 8;  // episodes submitted and not yet consumed

  // The update itself: hand-fused forward/backward + Adam for the dueling MLP (same maths as
  // the LibTorch path, tested to agree), or LibTorch autograd.
  bool fused_update = true;
  // Which kernels the fused update runs: "auto" picks AVX2+FMA where the CPU has it. A run
  // resumes bit-identically only on the same kernels; "portable" (SSE2) gives the same bits on
  // every x86-64 machine.
  std::string fused_kernels = "auto";

  void Describe(config::Visitor& v) {
    v.Field("state_dim", state_dim,
            {.doc = "navigator input size (RLoT: 7 aspects)", .min = 1.0, .max = 4096.0});
    v.Field("num_actions", num_actions,
            {.doc = "logic blocks (RLoT: 5)", .min = 2.0, .max = 4096.0});
    v.Field("hidden", hidden, {.doc = "hidden width (RLoT: 32)", .min = 1.0, .max = 4096.0});
    v.Field("gamma", gamma, {.doc = "discount", .min = 0.0, .max = 1.0});
    v.Field("lr", lr, {.doc = "Adam learning rate", .min = 0.0});
    v.Field("lr_decay", lr_decay,
            {.doc = "lr factor every lr_decay_episodes", .min = 0.0, .max = 1.0});
    v.Field("lr_decay_episodes", lr_decay_episodes, {.min = 1.0});
    v.Field("batch_size", batch_size, {.min = 1.0});
    v.Field("replay_capacity", replay_capacity, {.min = 1.0});
    v.Field("learn_start", learn_start,
            {.doc = "transitions in replay before learning starts", .min = 1.0});
    v.Field("epsilon_start", epsilon_start, {.min = 0.0, .max = 1.0});
    v.Field("epsilon_decay", epsilon_decay,
            {.doc = "multiplied in per env step", .min = 0.0, .max = 1.0});
    v.Field("epsilon_min", epsilon_min, {.min = 0.0, .max = 1.0});
    v.Field("target_update_every", target_update_every,
            {.doc = "updates between hard target copies", .min = 1.0});
    v.Field("loss", loss, {.choices = {"mse", "huber"}});
    v.Field("double_q", double_q, {.doc = "online net selects, target net evaluates"});
    v.Field("updates_per_step", updates_per_step, {.min = 0.0});
    v.Field("n_step", n_step, {.doc = "n-step returns (1 = RLoT)", .min = 1.0, .max = 100.0});
    v.Field("prioritized_replay", prioritized_replay);
    v.Field("priority_alpha", priority_alpha, {.min = 0.0, .max = 1.0});
    v.Field("priority_beta", priority_beta, {.min = 0.0, .max = 1.0});
    v.Field("priority_eps", priority_eps, {.min = 0.0});
    v.Field("distributed", distributed,
            {.doc = "act in rollout workers (actor/learner split) instead of in the learner"});
    v.Field("publish_every", publish_every,
            {.doc = "updates between weight publications to workers", .min = 1.0});
    v.Field("episodes_in_flight", episodes_in_flight,
            {.doc = "distributed: episodes submitted ahead of the learner",
             .min = 1.0,
             .max = 65536.0});
    v.Field("fused_update", fused_update,
            {.doc = "hand-fused forward/backward + Adam instead of LibTorch autograd"});
    v.Field("fused_kernels", fused_kernels,
            {.doc = "fused update kernels; portable = same bits on every x86-64 machine",
             .choices = {"auto", "portable"}});
  }
};

}  // namespace allot::trainer
