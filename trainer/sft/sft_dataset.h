// SFT data: JSONL lines of {"prompt": ..., "completion": ...} or chat {"messages": [{"role",
// "content"}, ...]}, tokenized with completion-only loss marks.
//
// Prompt/completion: ids = encode(prompt) + encode(completion) [+ EOS]; the completion tokens
// (and the EOS) carry loss. Chat: the conversation is rendered with the model's chat template
// turn by turn, and each assistant turn's tokens (its content and end-of-turn marker) carry
// loss; system, user and tool turns and the assistant headers do not. Segments are tokenized
// separately and concatenated, so the trained ids are exactly the marked segments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/tokenizer.h"
#include "trainer/sft/sft_config.h"

namespace allot::trainer {

struct SftExample {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss;  // loss[j] = 1: token j is a target (predicted from ids[..j))
  int64_t loss_tokens() const;
};

struct SftEncoder {
  const models::Tokenizer* tokenizer = nullptr;
  models::ChatTemplateKind chat_kind = models::ChatTemplateKind::kChatMl;
  models::ChatRenderOptions chat_options;
  // Why chat_kind could not be resolved (e.g. no tokenizer_config.json); reported by the
  // first chat line, so prompt/completion data needs no chat template.
  Status chat_error;
  std::optional<int32_t> eos_id;  // appended to prompt/completion lines when add_eos
  const SftConfig* config = nullptr;

  // One JSONL line; `where` ("file:line") prefixes every error. Overlong handling is separate.
  Result<SftExample> Encode(std::string_view line, const std::string& where) const;
};

struct SftDataset {
  std::string path;
  std::vector<SftExample> examples;
  int64_t skipped = 0;    // bad lines skipped under skip_bad_lines
  int64_t truncated = 0;  // longer than max_seq_len, cut
  int64_t dropped = 0;    // longer than max_seq_len (overlong: drop), or no loss token left
  std::vector<std::string> skipped_messages;  // the first 20
  int64_t loss_tokens = 0;
  int64_t tokens = 0;
};

// Reads config.data. Errors name file:line; blank lines are ignored.
Result<SftDataset> LoadSftDataset(const SftEncoder& encoder);

}  // namespace allot::trainer
