// RSTKit (CogER App. D.2, Table 8) assembled from a config: the QA toolkit over a local
// corpus, the calculator toolkit (arithmetic, symbolic, statistics) and sandboxed Python.
#pragma once

#include <memory>

#include "core/config/schema.h"
#include "core/status.h"
#include "tools/knowledge_base.h"
#include "tools/sandbox.h"
#include "tools/tool_registry.h"

namespace allot::tools {

// Config section `tools`.
struct ToolsConfig {
  bool arithmetic = true;
  bool symbolic = true;
  bool statistics = true;
  bool code = true;
  KnowledgeBaseConfig knowledge_base;  // QA tools are registered when a corpus is set
  SandboxConfig sandbox;

  void Describe(config::Visitor& v) {
    v.Field("arithmetic", arithmetic, {.doc = "register the basic arithmetic tools"});
    v.Field("symbolic", symbolic, {.doc = "register the GiNaC symbolic tools"});
    v.Field("statistics", statistics, {.doc = "register the statistics tools"});
    v.Field("code", code, {.doc = "register execute_python (bubblewrap sandbox)"});
    v.Field("knowledge_base", knowledge_base, {.doc = "QA toolkit corpus"});
    v.Field("sandbox", sandbox, {.doc = "limits of the Python sandbox"});
  }
};

// wiki_search, wiki_get_page, wiki_get_summary.
Status RegisterQaTools(ToolRegistry& registry, std::shared_ptr<const KnowledgeBase> kb);

// execute_python: status success when the program exits 0 in time; otherwise error, with
// stdout, stderr, exit code and timeout flag as the output either way.
Status RegisterCodeTool(ToolRegistry& registry, std::shared_ptr<const Sandbox> sandbox);

// Everything the config enables. Opening the corpus may build its index.
Result<std::unique_ptr<ToolRegistry>> BuildRstKit(const ToolsConfig& config);

}  // namespace allot::tools
