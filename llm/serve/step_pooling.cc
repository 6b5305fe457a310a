#include "llm/serve/step_pooling.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

namespace allot::llm::serve {
namespace {

using nlohmann::json;

// Ids of one pooling input; false with `error` set when it is neither text nor token ids.
bool InputIds(const models::Tokenizer& tok, const json& input, int32_t vocab,
              std::vector<int32_t>* ids, ApiError* error) {
  if (input.is_string()) {
    auto enc = tok.Encode(input.get<std::string>());
    if (!enc.ok()) {
      *error = BadRequest(enc.status().message(), "input");
      return false;
    }
    *ids = std::move(*enc);
    return true;
  }
  if (input.is_array()) {
    ids->clear();
    for (const json& t : input) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
        *error = BadRequest("'input' holds " + t.dump() + ", not a token id of this vocabulary",
                            "input");
        return false;
      }
      ids->push_back(t.get<int32_t>());
    }
    return true;
  }
  *error = BadRequest("'input' must be a string, a list of token ids, or a list of those", "input");
  return false;
}

// The ids of a tag given as text or as one id.
bool TagIds(const models::Tokenizer& tok, const json& body, int32_t vocab,
            std::vector<int32_t>* tag, ApiError* error) {
  if (body.contains("step_tag_id")) {
    const json& id = body["step_tag_id"];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
      *error = BadRequest("'step_tag_id' must be a token id of this vocabulary", "step_tag_id");
      return false;
    }
    *tag = {id.get<int32_t>()};
    return true;
  }
  std::string text = "\xD0\xBA\xD0\xB8";  // Math-Shepherd's "ки"
  if (body.contains("step_tag")) {
    if (!body["step_tag"].is_string() || body["step_tag"].get<std::string>().empty()) {
      *error = BadRequest("'step_tag' must be a non-empty string", "step_tag");
      return false;
    }
    text = body["step_tag"].get<std::string>();
  }
  auto enc = tok.Encode(text, {.parse_special = true, .add_special_tokens = false});
  if (!enc.ok() || enc->empty()) {
    *error = BadRequest("'step_tag' does not tokenize", "step_tag");
    return false;
  }
  *tag = std::move(*enc);
  return true;
}

bool ReturnedIds(const models::Tokenizer& tok, const json& body, int32_t vocab,
                 std::vector<int64_t>* out, ApiError* error) {
  out->clear();
  if (body.contains("returned_token_ids")) {
    const json& ids = body["returned_token_ids"];
    if (!ids.is_array() || ids.size() < 2) {
      *error =
          BadRequest("'returned_token_ids' must list at least two token ids", "returned_token_ids");
      return false;
    }
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
        *error = BadRequest(
            "'returned_token_ids' holds " + id.dump() + ", not a token id of this vocabulary",
            "returned_token_ids");
        return false;
      }
      out->push_back(id.get<int64_t>());
    }
    return true;
  }
  json tokens = json::array({"+", "-"});
  if (body.contains("returned_tokens")) tokens = body["returned_tokens"];
  if (!tokens.is_array() || tokens.size() < 2) {
    *error = BadRequest("'returned_tokens' must list at least two tokens", "returned_tokens");
    return false;
  }
  for (const json& t : tokens) {
    std::optional<int32_t> id;
    if (t.is_string()) id = tok.TokenId(t.get<std::string>());
    if (!id) {
      *error = BadRequest(
          "'returned_tokens' holds " + t.dump() + ", which is not one token of this vocabulary",
          "returned_tokens");
      return false;
    }
    out->push_back(*id);
  }
  return true;
}

// Positions of the last token of every non-overlapping occurrence of `tag` in `ids`.
std::vector<int64_t> TagPositions(const std::vector<int32_t>& ids,
                                  const std::vector<int32_t>& tag) {
  std::vector<int64_t> at;
  for (size_t i = 0; i + tag.size() <= ids.size();) {
    if (std::equal(tag.begin(), tag.end(), ids.begin() + static_cast<std::ptrdiff_t>(i))) {
      at.push_back(static_cast<int64_t>(i + tag.size() - 1));
      i += tag.size();
    } else {
      ++i;
    }
  }
  return at;
}

}  // namespace

bool ScoreStepPooling(Engine& engine, const std::string& served_name, const json& body, json* reply,
                      ApiError* error) {
  const models::Tokenizer& tok = engine.tokenizer();
  const auto& mc = engine.model_config();
  const int32_t vocab = static_cast<int32_t>(mc.vocab_size);

  std::string adapter;
  std::string model_name = served_name;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) {
      *error = BadRequest("'model' must be a string", "model");
      return false;
    }
    const std::string m = body["model"].get<std::string>();
    if (!m.empty() && m != served_name) {
      if (!engine.HasAdapter(m)) {
        error->status = 404;
        error->type = "not_found_error";
        error->param = "model";
        error->code = "model_not_found";
        error->message = "The model `" + m + "` does not exist.";
        return false;
      }
      adapter = m;
      model_name = m;
    }
  }
  auto input = body.find("input");
  if (input == body.end()) {
    *error = BadRequest("'input' is required", "input");
    return false;
  }
  // One input, or a batch of them: a list whose first element is a string or a list.
  std::vector<const json*> inputs;
  if (input->is_array() && !input->empty() && ((*input)[0].is_string() || (*input)[0].is_array())) {
    for (const json& x : *input) inputs.push_back(&x);
  } else {
    inputs.push_back(&*input);
  }
  std::vector<std::vector<int32_t>> all_ids(inputs.size());
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!InputIds(tok, *inputs[i], vocab, &all_ids[i], error)) return false;
    const int64_t n = static_cast<int64_t>(all_ids[i].size());
    if (n == 0) {
      *error = BadRequest("'input' is empty", "input");
      return false;
    }
    if (n > mc.max_position_embeddings) {
      *error = BadRequest("This model's maximum context length is " +
                              std::to_string(mc.max_position_embeddings) +
                              " tokens. However, the input has " + std::to_string(n) +
                              " tokens. Drop the earliest steps and retry.",
                          "input");
      error->code = "context_length_exceeded";
      return false;
    }
    total += n;
  }
  std::vector<int32_t> tag;
  std::vector<int64_t> returned;
  if (!TagIds(tok, body, vocab, &tag, error)) return false;
  if (!ReturnedIds(tok, body, vocab, &returned, error)) return false;

  json data = json::array();
  for (size_t i = 0; i < all_ids.size(); ++i) {
    const std::vector<int64_t> positions = TagPositions(all_ids[i], tag);
    json rows = json::array();
    if (!positions.empty()) {
      Status s = engine.WithModel(adapter, [&](models::CausalLMImpl& model) -> Status {
        std::vector<int64_t> ids64(all_ids[i].begin(), all_ids[i].end());
        const at::Tensor ids = torch::tensor(ids64, torch::kLong).view({1, -1}).to(model.device());
        // One forward pass; only the tag rows go through the output projection.
        const at::Tensor hidden = model.Hidden(ids)[0];
        const at::Tensor at_tags =
            hidden.index_select(0, torch::tensor(positions, torch::kLong).to(model.device()));
        const at::Tensor logits = model.Logits(at_tags).index_select(
            1, torch::tensor(returned, torch::kLong).to(model.device()));
        const at::Tensor probs = torch::softmax(logits.to(torch::kDouble), -1).cpu().contiguous();
        const double* p = probs.data_ptr<double>();
        for (int64_t r = 0; r < probs.size(0); ++r) {
          json row = json::array();
          for (int64_t c = 0; c < probs.size(1); ++c) row.push_back(p[r * probs.size(1) + c]);
          rows.push_back(std::move(row));
        }
        return Status::Ok();
      });
      if (!s.ok()) {
        *error = FromStatus(s);
        return false;
      }
    }
    data.push_back({{"index", i}, {"object", "pooling"}, {"data", std::move(rows)}});
  }
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  char id[32];
  std::snprintf(id, sizeof(id), "pool-%016llx", static_cast<unsigned long long>(rng()));
  *reply = {
      {"id", id},
      {"object", "list"},
      {"created", created},
      {"model", model_name},
      {"data", std::move(data)},
      {"usage", {{"prompt_tokens", total}, {"completion_tokens", 0}, {"total_tokens", total}}}};
  return true;
}

}  // namespace allot::llm::serve
