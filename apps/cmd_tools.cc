// allot tokenize | grade | reward: small tools for debugging prompts and rewards.
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/allot_config.h"
#include "apps/commands.h"
#include "envs/coger/reward_report.h"
#include "models/tokenizer/tokenize_command.h"
#include "rewards/grader.h"

namespace allot::apps {

void AddToolCommands(CLI::App& app, int* exit_code) {
  struct TokenizeArgs {
    std::string tokenizer;
    bool decode = false;
  };
  auto tok = std::make_shared<TokenizeArgs>();
  CLI::App* t = app.add_subcommand(
      "tokenize", "Text on stdin to token ids, or ids to text with --decode (like llama.cpp's)");
  t->add_option("--tokenizer", tok->tokenizer, "tokenizer.json, or a model directory holding one")
      ->required();
  t->add_flag("--decode", tok->decode, "read ids (space, comma or JSON array) and print text");
  t->callback([=] {
    *exit_code = models::RunTokenize(tok->tokenizer, tok->decode, std::cin, std::cout, std::cerr);
  });

  struct GradeArgs {
    std::string pred, gold, format = "boxed";
  };
  auto grade = std::make_shared<GradeArgs>();
  CLI::App* g = app.add_subcommand(
      "grade", "Extract the answers from a prediction and a reference and print the verdict");
  g->add_option("--pred", grade->pred, "the model's response")->required();
  g->add_option("--gold", grade->gold, "the reference answer")->required();
  g->add_option("--format", grade->format, "boxed (default) | choice | number | yesno | text");
  g->callback(
      [=] { *exit_code = rewards::RunGrade(grade->pred, grade->gold, grade->format, std::cout); });

  struct RewardArgs {
    std::string recipe, level_correct;
    envs::coger::RewardReportRequest req;
    int lmin = 0;
  };
  auto rw = std::make_shared<RewardArgs>();
  CLI::App* r = app.add_subcommand(
      "reward", "Print every reward component of one output under a recipe's rewards, as JSON");
  r->add_option("--recipe", rw->recipe, "recipe file or name (configs/<name>.yaml)")->required();
  r->add_option("--pred", rw->req.pred, "the policy's output (CogER: the router's, with its tag)")
      ->required();
  r->add_option("--gold", rw->req.gold, "the reference answer (deeptool: the expert's step)")
      ->required();
  r->add_option("--final", rw->req.final_answer,
                "CogER L2-L4: the answering model's text the answer is read from");
  r->add_option("--question", rw->req.question, "the question (for question-keyed terms)");
  r->add_option("--format", rw->req.format, "answer format, overriding rewards.answer.format");
  auto* lmin = r->add_option("--lmin", rw->lmin, "CogER L_min, the lowest level that solves it");
  r->add_option("--level-correct", rw->level_correct,
                "CogER per-level outcomes L1..L4, e.g. 0,1,1,1")
      ->excludes(lmin);
  r->callback([=] {
    auto path = FindRecipe(rw->recipe);
    if (!path.ok()) {
      std::cerr << "allot reward: " << path.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    // Rewards only: the recipe's model path, data and endpoint URLs may stay unset.
    const std::vector<std::string> read = {"rewards"};
    auto loaded = LoadConfig(*path, {}, &read);
    if (!loaded.ok()) {
      std::cerr << "allot reward: " << loaded.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    envs::coger::RewardReportRequest req = rw->req;
    if (lmin->count() > 0) req.lmin = rw->lmin;
    if (!rw->level_correct.empty()) {
      auto lc = envs::coger::ParseLevelCorrect(rw->level_correct);
      if (!lc.ok()) {
        std::cerr << "allot reward: " << lc.status().ToString() << "\n";
        *exit_code = kExitError;
        return;
      }
      req.level_correct = *lc;
    }
    auto report = envs::coger::ExplainReward(loaded->config.rewards, req);
    if (!report.ok()) {
      std::cerr << "allot reward: " << report.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    std::cout << report->dump(2) << "\n";
    *exit_code = kExitOk;
  });
}

}  // namespace allot::apps
