#include "tools/rstkit.h"

#include "tools/calculator_tools.h"

namespace allot::tools {
namespace {

using nlohmann::json;

class CodeTool : public Tool {
 public:
  explicit CodeTool(std::shared_ptr<const Sandbox> sandbox) : sandbox_(std::move(sandbox)) {
    spec_.name = "execute_python";
    spec_.family = "code";
    spec_.description =
        "Runs a short Python 3 program in a sandbox (no network, no files outside /tmp, "
        "limited time and memory) and returns its stdout, stderr and exit code. Print the "
        "result. Use only when no other tool fits.";
    spec_.input_schema = {{"type", "object"},
                          {"properties",
                           {{"code",
                             {{"type", "string"},
                              {"minLength", 1},
                              {"maxLength", sandbox_->config().max_code_bytes},
                              {"description", "complete Python program"}}}}},
                          {"required", {"code"}},
                          {"additionalProperties", false}};
    spec_.examples = {json{{"code",
                            "import random\nrandom.seed(0)\nprint(sum(random.random() "
                            "< 0.5 for _ in range(10000)))"}}};
  }
  const ToolSpec& spec() const override { return spec_; }
  Result<json> Run(const json& params) override {
    ALLOT_ASSIGN_OR_RETURN(ExecResult r, sandbox_->RunPython(params["code"].get<std::string>()));
    return Record(r);
  }
  ToolResult Invoke(const json& params) override {
    Result<ExecResult> r = sandbox_->RunPython(params["code"].get<std::string>());
    if (!r.ok()) return ToolResult::Error(r.status().message());
    return {r->ok(), Record(*r)};
  }

 private:
  static json Record(const ExecResult& r) {
    json out{{"stdout", r.stdout_text}, {"stderr", r.stderr_text}, {"exit_code", r.exit_code}};
    if (r.timed_out) out["timed_out"] = true;
    if (r.term_signal) out["signal"] = r.term_signal;
    if (r.stdout_truncated || r.stderr_truncated) out["truncated"] = true;
    return out;
  }
  std::shared_ptr<const Sandbox> sandbox_;
  ToolSpec spec_;
};

json PageJson(const Page& p) { return {{"id", p.id}, {"title", p.title}, {"text", p.text}}; }

}  // namespace

Status RegisterQaTools(ToolRegistry& registry, std::shared_ptr<const KnowledgeBase> kb) {
  const json id_or_title = {
      {"type", "string"}, {"minLength", 1}, {"description", "page id or exact title"}};
  ALLOT_RETURN_IF_ERROR(registry.Register(std::make_unique<FunctionTool>(
      ToolSpec{"wiki_search",
               "qa",
               "Searches the knowledge base; returns the titles and ids of the most relevant "
               "pages (default top 5).",
               {{"type", "object"},
                {"properties",
                 {{"query", {{"type", "string"}, {"minLength", 1}}},
                  {"top_k",
                   {{"type", "integer"}, {"minimum", 1}, {"maximum", kb->config().max_top_k}}}}},
                {"required", {"query"}},
                {"additionalProperties", false}},
               {json{{"query", "marmot habitat"}, {"top_k", 5}}}},
      [kb](const json& p) -> Result<json> {
        const int k = static_cast<int>(p.value("top_k", kb->config().default_top_k));
        ALLOT_ASSIGN_OR_RETURN(auto hits, kb->Search(p["query"].get<std::string>(), k));
        json out = json::array();
        for (const auto& h : hits) out.push_back({{"id", h.id}, {"title", h.title}});
        return json{{"results", out}};
      })));
  ALLOT_RETURN_IF_ERROR(registry.Register(std::make_unique<FunctionTool>(
      ToolSpec{"wiki_get_page",
               "qa",
               "Returns the full text of a page by id or title.",
               {{"type", "object"},
                {"properties", {{"page", id_or_title}}},
                {"required", {"page"}},
                {"additionalProperties", false}},
               {json{{"page", "Marmot"}}}},
      [kb](const json& p) -> Result<json> {
        ALLOT_ASSIGN_OR_RETURN(Page page, kb->GetPage(p["page"].get<std::string>()));
        return PageJson(page);
      })));
  ALLOT_RETURN_IF_ERROR(registry.Register(std::make_unique<FunctionTool>(
      ToolSpec{"wiki_get_summary",
               "qa",
               "Returns the introductory summary (first sentences) of a page by id or title.",
               {{"type", "object"},
                {"properties", {{"page", id_or_title}}},
                {"required", {"page"}},
                {"additionalProperties", false}},
               {json{{"page", "Marmot"}}}},
      [kb](const json& p) -> Result<json> {
        ALLOT_ASSIGN_OR_RETURN(Page page,
                               kb->GetSummary(p["page"].get<std::string>(),
                                              static_cast<int>(kb->config().summary_sentences)));
        return PageJson(page);
      })));
  return Status::Ok();
}

Status RegisterCodeTool(ToolRegistry& registry, std::shared_ptr<const Sandbox> sandbox) {
  return registry.Register(std::make_unique<CodeTool>(std::move(sandbox)));
}

Result<std::unique_ptr<ToolRegistry>> BuildRstKit(const ToolsConfig& config) {
  auto registry = std::make_unique<ToolRegistry>();
  if (!config.knowledge_base.corpus.empty()) {
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<KnowledgeBase> kb,
                           KnowledgeBase::Open(config.knowledge_base));
    ALLOT_RETURN_IF_ERROR(
        RegisterQaTools(*registry, std::shared_ptr<const KnowledgeBase>(std::move(kb))));
  }
  if (config.arithmetic) ALLOT_RETURN_IF_ERROR(RegisterArithmeticTools(*registry));
  if (config.symbolic) ALLOT_RETURN_IF_ERROR(RegisterSymbolicTools(*registry));
  if (config.statistics) ALLOT_RETURN_IF_ERROR(RegisterStatisticsTools(*registry));
  if (config.code) {
    ALLOT_RETURN_IF_ERROR(
        RegisterCodeTool(*registry, std::make_shared<const Sandbox>(config.sandbox)));
  }
  return registry;
}

}  // namespace allot::tools
