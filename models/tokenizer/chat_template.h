// Chat templates for the two model families allot trains: ChatML (Qwen2, Qwen2.5, Qwen3 and
// allot's tiny models) and Llama 3. They are written out in C++ rather than run through a
// Jinja engine; tests pin the exact strings the models' own templates produce.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"

namespace allot::models {

enum class ChatTemplateKind { kChatMl, kLlama3 };

const char* ChatTemplateKindName(ChatTemplateKind kind);

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
};

// Config section `chat_template` (under the model's section).
struct ChatTemplateConfig {
  // "auto" reads the model's tokenizer_config.json (its chat_template, else the vocabulary).
  std::string kind = "auto";
  // ChatML only: a system turn added when the conversation has none (Qwen2.5 uses "You are
  // Qwen, created by Alibaba Cloud. You are a helpful assistant."; Qwen3 none).
  std::string default_system;
  // Qwen3: false appends an empty <think></think> block to the generation prompt, which is how
  // its template switches thinking off.
  bool enable_thinking = true;

  void Describe(config::Visitor& v) {
    v.Field("kind", kind,
            {.doc = "chat template: auto (from tokenizer_config.json), chatml or llama3",
             .choices = {"auto", "chatml", "llama3"}});
    v.Field("default_system", default_system,
            {.doc = "ChatML: system prompt used when a conversation has none"});
    v.Field("enable_thinking", enable_thinking,
            {.doc = "Qwen3: false adds an empty <think></think> block to the generation prompt"});
  }
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;            // end with the assistant header
  std::string default_system;                   // ChatML, see ChatTemplateConfig
  bool enable_thinking = true;                  // ChatML, see ChatTemplateConfig
  std::string bos_token = "<|begin_of_text|>";  // Llama 3
};

// Renders `messages` as the prompt text. Its special tokens are meant to be parsed by
// Tokenizer::Encode with parse_special on and add_special_tokens off (the BOS is in the text).
std::string RenderChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       const ChatRenderOptions& options = {});

// Picks the template from a tokenizer_config.json's "chat_template" (a string, or a list of
// {name, template}); NotFound when it names neither family's markers.
Result<ChatTemplateKind> DetectChatTemplate(const std::string& tokenizer_config_path);

// Resolves config.kind: "chatml" / "llama3" directly, "auto" from
// `model_dir`/tokenizer_config.json.
Result<ChatTemplateKind> ResolveChatTemplate(const ChatTemplateConfig& config,
                                             const std::string& model_dir);

}  // namespace allot::models
