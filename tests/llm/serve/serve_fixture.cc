#include "tests/llm/serve/serve_fixture.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "models/causal_lm.h"
#include "models/peft.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "tests/models/tiny_model.h"

namespace allot::llm::serve::testing {

std::string WriteServableTinyModel(const std::string& name, uint32_t seed) {
  return WriteServableTinyModelIn(models::testing::MakeTempDir(name), seed);
}

std::string WriteServableTinyModelIn(const std::string& model_dir, uint32_t seed) {
  models::ByteTokenizer tok;
  std::filesystem::create_directories(model_dir);
  const std::string dir =
      models::testing::WriteTinyModel(model_dir, {.vocab_size = tok.vocab_size(), .seed = seed});
  std::ofstream(dir + "/tokenizer.json") << tok.ToHuggingFaceJson();
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"})";
  return dir;
}

std::string WriteAdapter(const std::string& model_dir, const std::string& name, bool zero_b) {
  auto model = models::CausalLMImpl::Load(model_dir);
  if (!model.ok()) return "";
  if (!(*model)->AttachLora({.r = 4, .alpha = 8.0}, {"q_proj", "v_proj"}, 3).ok()) return "";
  if (!zero_b) {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (const auto& site : (*model)->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.5);
    }
  }
  const std::string dir = models::testing::MakeTempDir(name);
  if (!models::SaveAdapter(**model, dir, model_dir).ok()) return "";
  return dir;
}

namespace {

Reply Wrap(const httplib::Result& r) {
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  return out;
}

}  // namespace

Reply Post(int port, const std::string& path, const std::string& body, const std::string& api_key) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120);
  httplib::Headers headers;
  if (!api_key.empty()) headers.insert({"Authorization", "Bearer " + api_key});
  return Wrap(cli.Post(path.c_str(), headers, body, "application/json"));
}

Reply Post(int port, const std::string& path, const nlohmann::json& body) {
  return Post(port, path, body.dump());
}

Reply Get(int port, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120);
  return Wrap(cli.Get(path.c_str()));
}

std::vector<std::string> SseEvents(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      out.push_back("<unterminated>" + body.substr(pos));
      break;
    }
    const std::string event = body.substr(pos, end - pos);
    out.push_back(event.rfind("data: ", 0) == 0 ? event.substr(6) : "<bad>" + event);
    pos = end + 2;
  }
  return out;
}

}  // namespace allot::llm::serve::testing
