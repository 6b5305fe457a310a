// allot serve | rollout-worker | version
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/commands.h"

namespace allot::apps {

void AddServiceCommands(CLI::App& app, int* exit_code) {
  auto sink = std::make_shared<std::vector<std::string>>();
  CLI::App* serve =
      app.add_subcommand("serve", "OpenAI-compatible server for a local model and adapters");
  serve->add_option("--model", *sink, "Hugging Face model directory");
  serve->add_option("--adapter", *sink, "PEFT adapter directory");
  serve->callback([=] { *exit_code = NotLanded("serve", "the local model server"); });

  CLI::App* worker = app.add_subcommand("rollout-worker", "Run episodes for a learner over gRPC");
  worker->add_option("--listen", *sink, "address to listen on (default 127.0.0.1:50051)");
  worker->callback([=] { *exit_code = NotLanded("rollout-worker", "the gRPC rollout worker"); });
}

void AddInfoCommands(CLI::App& app, int* exit_code) {
  CLI::App* version = app.add_subcommand("version", "Print the version and build details");
  version->callback([=] {
    std::cout << "allot " << ALLOT_VERSION << "\n";
#ifdef __VERSION__
    std::cout << "compiler: " << __VERSION__ << "\n";
#endif
    *exit_code = kExitOk;
  });
}

}  // namespace allot::apps
