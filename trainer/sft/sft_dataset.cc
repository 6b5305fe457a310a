#include "trainer/sft/sft_dataset.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace allot::trainer {
namespace {

using nlohmann::json;

Result<std::string> StringField(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return InvalidArgument(where + ": missing field '" + key + "'");
  if (!it->is_string()) return InvalidArgument(where + ": field '" + key + "' must be a string");
  return it->get<std::string>();
}

Status Append(const models::Tokenizer& tok, std::string_view text, bool add_special, uint8_t mark,
              SftExample& out, const std::string& where) {
  models::EncodeOptions o;
  o.add_special_tokens = add_special;
  auto ids = tok.Encode(text, o);
  if (!ids.ok()) return ids.status().Annotate(where);
  out.ids.insert(out.ids.end(), ids->begin(), ids->end());
  out.loss.insert(out.loss.end(), ids->size(), mark);
  return Status::Ok();
}

}  // namespace

int64_t SftExample::loss_tokens() const {
  int64_t n = 0;
  for (size_t j = 1; j < loss.size(); ++j) n += loss[j];
  return n;
}

Result<SftExample> SftEncoder::Encode(std::string_view line, const std::string& where) const {
  json obj;
  try {
    obj = json::parse(line);
  } catch (const json::parse_error& e) {
    return InvalidArgument(where + ": not JSON (" + e.what() + ")");
  }
  if (!obj.is_object()) return InvalidArgument(where + ": a line must be a JSON object");
  std::string format = config->format;
  if (format == "auto") {
    if (obj.contains("messages")) {
      format = "chat";
    } else if (obj.contains("prompt") || obj.contains("completion")) {
      format = "prompt_completion";
    } else {
      return InvalidArgument(where + ": expected \"prompt\"/\"completion\" or \"messages\"");
    }
  }
  SftExample ex;
  if (format == "prompt_completion") {
    ALLOT_ASSIGN_OR_RETURN(std::string prompt, StringField(obj, "prompt", where));
    ALLOT_ASSIGN_OR_RETURN(std::string completion, StringField(obj, "completion", where));
    if (completion.empty() && !config->add_eos) {
      return InvalidArgument(where + ": empty completion (nothing to train on)");
    }
    ALLOT_RETURN_IF_ERROR(Append(*tokenizer, prompt, true, 0, ex, where));
    ALLOT_RETURN_IF_ERROR(Append(*tokenizer, completion, false, 1, ex, where));
    if (config->add_eos) {
      if (!eos_id) return InvalidArgument("sft.add_eos: the model has no EOS token");
      ex.ids.push_back(*eos_id);
      ex.loss.push_back(1);
    }
    return ex;
  }
  if (!chat_error.ok()) return chat_error.Annotate(where + ": chat line");
  auto it = obj.find("messages");
  if (it == obj.end() || !it->is_array() || it->empty()) {
    return InvalidArgument(where + ": field 'messages' must be a non-empty list");
  }
  std::vector<models::ChatMessage> messages;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = where + ": messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return InvalidArgument(at + " must be an object");
    ALLOT_ASSIGN_OR_RETURN(std::string role, StringField(m, "role", at));
    ALLOT_ASSIGN_OR_RETURN(std::string content, StringField(m, "content", at));
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return InvalidArgument(at + ": unknown role '" + role + "'");
    }
    messages.push_back({role, content});
  }
  // Turn by turn: the text up to an assistant turn's header is context (no loss); the turn
  // itself, up to and including its end marker, is trained.
  std::string done;
  models::ChatRenderOptions with_header = chat_options;
  with_header.add_generation_prompt = true;
  models::ChatRenderOptions closed = chat_options;
  closed.add_generation_prompt = false;
  bool any = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant") continue;
    std::span<const models::ChatMessage> before(messages.data(), i);
    std::span<const models::ChatMessage> through(messages.data(), i + 1);
    const std::string prefix = models::RenderChat(chat_kind, before, with_header);
    const std::string full = models::RenderChat(chat_kind, through, closed);
    if (prefix.compare(0, done.size(), done) != 0 || full.compare(0, prefix.size(), prefix) != 0) {
      return InvalidArgument(where +
                             ": the chat template renders earlier turns differently once "
                             "assistant turn " +
                             std::to_string(i) +
                             " follows; completion-only masking needs a prefix-stable template");
    }
    ALLOT_RETURN_IF_ERROR(
        Append(*tokenizer, std::string_view(prefix).substr(done.size()), false, 0, ex, where));
    ALLOT_RETURN_IF_ERROR(
        Append(*tokenizer, std::string_view(full).substr(prefix.size()), false, 1, ex, where));
    done = full;
    any = true;
  }
  if (!any) return InvalidArgument(where + ": no assistant turn to train on");
  return ex;
}

Result<SftDataset> LoadSftDataset(const SftEncoder& encoder) {
  const SftConfig& c = *encoder.config;
  SftDataset ds;
  ds.path = c.data;
  if (c.data.empty()) return InvalidArgument("sft.data: no training file given");
  std::ifstream in(c.data);
  if (!in) return NotFound("sft.data: cannot open " + c.data);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = c.data + ":" + std::to_string(n);
    auto ex = encoder.Encode(line, where);
    if (!ex.ok()) {
      if (!c.skip_bad_lines) return ex.status();
      ++ds.skipped;
      if (ds.skipped_messages.size() < 20) ds.skipped_messages.push_back(ex.status().message());
      continue;
    }
    if (static_cast<int64_t>(ex->ids.size()) > c.max_seq_len) {
      if (c.overlong == "error") {
        return InvalidArgument(
            where + ": " + std::to_string(ex->ids.size()) +
            " tokens, more than sft.max_seq_len = " + std::to_string(c.max_seq_len));
      }
      if (c.overlong == "drop") {
        ++ds.dropped;
        continue;
      }
      ex->ids.resize(c.max_seq_len);
      ex->loss.resize(c.max_seq_len);
      if (ex->loss_tokens() == 0) {
        ++ds.dropped;  // the prompt alone fills max_seq_len
        continue;
      }
      ++ds.truncated;
    }
    if (ex->loss_tokens() == 0) {
      ++ds.dropped;  // e.g. a one-token completion with an empty prompt: nothing predicts it
      continue;
    }
    ds.loss_tokens += ex->loss_tokens();
    ds.tokens += static_cast<int64_t>(ex->ids.size());
    ds.examples.push_back(std::move(*ex));
  }
  if (ds.examples.empty()) return InvalidArgument(c.data + ": no usable training example");
  return ds;
}

}  // namespace allot::trainer
