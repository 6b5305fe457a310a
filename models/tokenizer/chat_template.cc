#include "models/tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace allot::models {
namespace {

// Jinja's trim: strips leading and trailing whitespace.
std::string Trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// Qwen's ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per turn; consecutive tool results
// share one user turn, each wrapped in <tool_response> (Qwen2.5 / Qwen3 templates).
std::string RenderChatMl(std::span<const ChatMessage> messages, const ChatRenderOptions& o) {
  std::string out;
  if (!o.default_system.empty() && (messages.empty() || messages[0].role != "system")) {
    out += "<|im_start|>system\n" + o.default_system + "<|im_end|>\n";
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
      continue;
    }
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (o.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// Meta's Llama 3 template: BOS, then per turn a header, the trimmed content and <|eot_id|>.
std::string RenderLlama3(std::span<const ChatMessage> messages, const ChatRenderOptions& o) {
  std::string out = o.bos_token;
  for (const ChatMessage& m : messages) {
    out +=
        "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + Trim(m.content) + "<|eot_id|>";
  }
  if (o.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::optional<ChatTemplateKind> KindFromTemplateText(const std::string& text) {
  if (text.find("<|start_header_id|>") != std::string::npos) return ChatTemplateKind::kLlama3;
  if (text.find("<|im_start|>") != std::string::npos) return ChatTemplateKind::kChatMl;
  return std::nullopt;
}

}  // namespace

const char* ChatTemplateKindName(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kChatMl:
      return "chatml";
    case ChatTemplateKind::kLlama3:
      return "llama3";
  }
  return "?";
}

std::string RenderChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       const ChatRenderOptions& options) {
  switch (kind) {
    case ChatTemplateKind::kChatMl:
      return RenderChatMl(messages, options);
    case ChatTemplateKind::kLlama3:
      return RenderLlama3(messages, options);
  }
  return {};
}

Result<ChatTemplateKind> DetectChatTemplate(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open tokenizer config");
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(path + ": invalid JSON at byte " + std::to_string(e.byte));
  }
  if (root.is_object() && root.contains("chat_template")) {
    const auto& t = root["chat_template"];
    std::string text;
    if (t.is_string()) {
      text = t.get<std::string>();
    } else if (t.is_array()) {
      // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
      for (const auto& item : t) {
        if (item.is_object() && item.value("name", "") == "default" && item.contains("template") &&
            item["template"].is_string()) {
          text = item["template"].get<std::string>();
        }
      }
    }
    if (auto kind = KindFromTemplateText(text)) return *kind;
  }
  // No template: judge by the special tokens the config names.
  if (auto kind = KindFromTemplateText(ss.str())) return *kind;
  return NotFound(path +
                  ": chat_template: neither ChatML (<|im_start|>) nor Llama 3 "
                  "(<|start_header_id|>) markers found; set chat_template.kind");
}

Result<ChatTemplateKind> ResolveChatTemplate(const ChatTemplateConfig& config,
                                             const std::string& model_dir) {
  if (config.kind == "chatml") return ChatTemplateKind::kChatMl;
  if (config.kind == "llama3") return ChatTemplateKind::kLlama3;
  if (config.kind != "auto") {
    return InvalidArgument("chat_template.kind: unknown value \"" + config.kind +
                           "\" (expected auto, chatml or llama3)");
  }
  return DetectChatTemplate((std::filesystem::path(model_dir) / "tokenizer_config.json").string());
}

}  // namespace allot::models
