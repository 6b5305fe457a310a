// allot tokenize | grade: small tools for debugging prompts and rewards.
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/commands.h"
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
  g->add_option("--format", grade->format, "boxed | choice | number | yesno | text");
  g->callback(
      [=] { *exit_code = rewards::RunGrade(grade->pred, grade->gold, grade->format, std::cout); });
}

}  // namespace allot::apps
