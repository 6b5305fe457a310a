#include "llm/serve/server.h"

#include <sys/socket.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "core/constant_time.h"
#include "llm/serve/api_request.h"
#include "llm/serve/api_response.h"
#include "llm/serve/step_pooling.h"
#include "models/decode_graph.h"

namespace allot::llm::serve {
namespace {

using nlohmann::json;

const std::set<std::string>& PostPaths() {
  static const std::set<std::string> p = {
      "/v1/completions", "/v1/chat/completions",  "/tokenize",
      "/detokenize",     "/v1/load_lora_adapter", "/v1/unload_lora_adapter",
      "/pooling"};
  return p;
}

const std::set<std::string>& GetPaths() {
  static const std::set<std::string> p = {"/v1/models", "/health", "/metrics"};
  return p;
}

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.Body(), "application/json");
}

void SendJson(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(Dump(j), "application/json");
}

// Parses the body as a JSON object, or answers 400.
bool ParseBody(const httplib::Request& req, httplib::Response& res, json* out) {
  *out = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    SendError(res, BadRequest("the request body is not valid JSON"));
    return false;
  }
  if (!out->is_object()) {
    SendError(res, BadRequest("the request body must be a JSON object"));
    return false;
  }
  return true;
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseAdapterSpec(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return InvalidArgument("--adapter " + spec + ": expected NAME=DIR");
  }
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

Server::Server(ServeConfig config, models::ChatTemplateKind chat_template)
    : config_(std::move(config)), chat_template_(chat_template) {}

Server::~Server() {
  Stop();
  if (engine_) engine_->Shutdown();
}

Result<std::unique_ptr<Server>> Server::Create(const ServeConfig& config) {
  if (config.model.empty()) return InvalidArgument("serve.model: a model directory is required");
  models::LoadOptions load;
  load.dtype = config.dtype;
  load.device = config.device;
  ALLOT_ASSIGN_OR_RETURN(auto model, models::CausalLMImpl::Load(config.model, load));
  const bool graphs_possible = models::DecodeGraph::Available() && model->device().is_cuda();
  if (config.cuda_graphs == "true" && !graphs_possible) {
    return InvalidArgument(
        "serve.cuda_graphs: true, but " +
        std::string(models::DecodeGraph::Available() ? "the device is " + config.device
                                                     : "this build has no CUDA (ALLOT_WITH_CUDA)") +
        ": CUDA graphs need a CUDA device in a CUDA build (set it to false or auto)");
  }
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<models::Tokenizer> tok,
                         models::LoadTokenizer(config.model));
  auto kind = models::ResolveChatTemplate(config.chat_template, config.model);
  models::ChatTemplateKind chat = models::ChatTemplateKind::kChatMl;
  if (kind.ok()) {
    chat = *kind;
  } else if (config.chat_template.kind != "auto" || kind.status().code() != StatusCode::kNotFound) {
    return kind.status();
  }
  std::unique_ptr<Server> s(new Server(config, chat));
  s->served_name_ = config.served_model_name;
  if (s->served_name_.empty()) {
    std::filesystem::path p(config.model);
    if (p.filename().empty()) p = p.parent_path();
    s->served_name_ = p.filename().string();
  }
  EngineOptions eo;
  eo.max_batch = config.max_batch;
  eo.batch_wait_ms = config.batch_wait_ms;
  eo.max_waiting = config.max_waiting;
  eo.cuda_graphs = config.cuda_graphs != "false" && graphs_possible;
  eo.batch_invariant = config.deterministic;
  s->engine_ = std::make_unique<Engine>(
      std::move(model), std::shared_ptr<const models::Tokenizer>(std::move(tok)), eo, &s->metrics_);
  for (const auto& spec : config.adapters) {
    ALLOT_ASSIGN_OR_RETURN(auto nd, ParseAdapterSpec(spec));
    if (nd.first == s->served_name_) {
      return InvalidArgument("--adapter " + spec + ": the name is the base model's");
    }
    ALLOT_RETURN_IF_ERROR(
        s->engine_->LoadAdapter(nd.first, nd.second).Annotate("--adapter " + spec));
  }
  s->http_ = std::make_unique<httplib::Server>();
  s->Route();
  return s;
}

void Server::Route() {
  httplib::Server& h = *http_;
  const size_t threads = static_cast<size_t>(config_.http_threads);
  h.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  h.set_payload_max_length(static_cast<size_t>(config_.max_body_bytes));
  h.set_read_timeout(60);
  h.set_write_timeout(60);
  h.set_keep_alive_timeout(30);
  h.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = sock;  // the last socket offered is the one that binds
  });

  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (config_.api_key.empty() || req.path == "/health") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (!ConstantTimeEquals(req.get_header_value("Authorization"), "Bearer " + config_.api_key)) {
      ApiError e;
      e.status = 401;
      e.type = "authentication_error";
      e.code = "invalid_api_key";
      e.message = "missing or wrong API key (Authorization: Bearer ...)";
      SendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Statuses set by httplib itself (404 no route, 413 body too large, 400 bad framing) get the
  // JSON error body too.
  h.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        switch (res.status) {
          case 404:
            e.type = "not_found_error";
            e.message = "no route " + req.method + " " + req.path;
            break;
          case 413:
            e.message = "the request body is too large";
            break;
          default:
            e.message = "HTTP " + std::to_string(res.status);
            break;
        }
        SendError(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));
  h.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        ApiError e;
        e.status = 500;
        e.type = "internal_server_error";
        e.message = "internal error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& ex) {
          e.message = std::string("internal error: ") + ex.what();
        } catch (...) {
        }
        SendError(res, e);
      });
  // Counted when the response is final but before it is written (the logger would run after
  // the client already has it, so a scrape right after a reply could miss the reply).
  h.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool known = PostPaths().count(req.path) || GetPaths().count(req.path);
    metrics_.CountRequest(known ? req.path : "other", res.status);
  });

  h.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleGenerate(req, res, false);
  });
  h.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleGenerate(req, res, true);
  });
  h.Get("/v1/models",
        [this](const httplib::Request&, httplib::Response& res) { HandleModels(res); });
  h.Post("/tokenize",
         [this](const httplib::Request& req, httplib::Response& res) { HandleTokenize(req, res); });
  h.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    HandleDetokenize(req, res);
  });
  h.Post("/v1/load_lora_adapter",
         [this](const httplib::Request& req, httplib::Response& res) { HandleLoadLora(req, res); });
  h.Post("/v1/unload_lora_adapter", [this](const httplib::Request& req, httplib::Response& res) {
    HandleUnloadLora(req, res);
  });
  // A PRM's step scores from one forward pass (step_pooling.h).
  h.Post("/pooling", [this](const httplib::Request& req, httplib::Response& res) {
    json body, reply;
    if (!ParseBody(req, res, &body)) return;
    ApiError e;
    if (!ScoreStepPooling(*engine_, served_name_, body, &reply, &e)) return SendError(res, e);
    SendJson(res, reply);
  });
  h.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content("", "text/plain");
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render(), "text/plain; version=0.0.4");
  });
  // A known path with the wrong method is 405, not 404.
  auto not_allowed = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      ApiError e;
      e.status = 405;
      e.message =
          "method " + req.method + " is not allowed on " + req.path + " (use " + allow + ")";
      res.set_header("Allow", allow);
      SendError(res, e);
    };
  };
  for (const auto& p : PostPaths()) {
    h.Get(p, not_allowed("POST"));
    h.Put(p, not_allowed("POST"));
    h.Delete(p, not_allowed("POST"));
    h.Patch(p, not_allowed("POST"));
  }
  for (const auto& p : GetPaths()) {
    h.Post(p, not_allowed("GET"));
    h.Put(p, not_allowed("GET"));
    h.Delete(p, not_allowed("GET"));
    h.Patch(p, not_allowed("GET"));
  }
}

Result<int> Server::Bind() {
  if (config_.port == 0) {
    port_ = http_->bind_to_any_port(config_.host);
    if (port_ <= 0) return Unavailable("cannot bind " + config_.host + " to a free port");
  } else {
    if (!http_->bind_to_port(config_.host, config_.port)) {
      return Unavailable("cannot bind " + config_.host + ":" + std::to_string(config_.port) +
                         " (in use, or not a local address)");
    }
    port_ = config_.port;
  }
  // libcpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian
  // built it): a burst of a few hundred connections overflowed the accept queue, and the
  // clients it dropped read no reply (4 of 256 on a CPU, 5 of 256 on an H100). Listening again
  // on the bound socket raises the backlog.
  if (listen_fd_ >= 0 && ::listen(listen_fd_, SOMAXCONN) != 0) {
    return Unavailable("cannot listen on " + config_.host + ":" + std::to_string(port_));
  }
  return port_;
}

Status Server::Listen() {
  if (!http_->listen_after_bind()) return Internal("the HTTP server stopped with an error");
  return Status::Ok();
}

Result<int> Server::Start() {
  ALLOT_ASSIGN_OR_RETURN(int port, Bind());
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  for (int i = 0; i < 500 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return port;
}

void Server::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string Server::url() const {
  const std::string host = config_.host == "0.0.0.0" ? "127.0.0.1" : config_.host;
  return "http://" + host + ":" + std::to_string(port_);
}

void Server::HandleModels(httplib::Response& res) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t max_len = engine_->model_config().max_position_embeddings;
  json data = json::array();
  data.push_back({{"id", served_name_},
                  {"object", "model"},
                  {"created", now},
                  {"owned_by", "allot"},
                  {"root", config_.model},
                  {"parent", nullptr},
                  {"max_model_len", max_len}});
  for (const auto& [name, dir] : engine_->Adapters()) {
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", now},
                    {"owned_by", "allot"},
                    {"root", dir},
                    {"parent", served_name_},
                    {"max_model_len", max_len}});
  }
  SendJson(res, {{"object", "list"}, {"data", data}});
}

void Server::HandleTokenize(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (!ParseBody(req, res, &body)) return;
  const auto& tok = engine_->tokenizer();
  Result<std::vector<int32_t>> ids = std::vector<int32_t>{};
  auto msgs = body.find("messages");
  if (msgs != body.end()) {
    GenerateRequest g;
    ApiError err;
    json chat = {{"messages", *msgs}};
    if (body.contains("add_generation_prompt")) {
      chat["add_generation_prompt"] = body["add_generation_prompt"];
    }
    if (!ParseGenerateRequest(chat, true, 1, &g, &err)) return SendError(res, err);
    models::ChatRenderOptions ro;
    ro.add_generation_prompt = g.add_generation_prompt;
    ro.default_system = config_.chat_template.default_system;
    ro.enable_thinking = config_.chat_template.enable_thinking;
    ids = tok.Encode(models::RenderChat(chat_template_, g.messages, ro),
                     {.parse_special = true, .add_special_tokens = false});
  } else {
    auto prompt = body.find("prompt");
    if (prompt == body.end() || !prompt->is_string()) {
      return SendError(res, BadRequest("'prompt' (a string) or 'messages' is required", "prompt"));
    }
    bool add_special = true;
    auto add = body.find("add_special_tokens");
    if (add != body.end()) {
      if (!add->is_boolean()) {
        return SendError(
            res, BadRequest("'add_special_tokens' must be a boolean", "add_special_tokens"));
      }
      add_special = add->get<bool>();
    }
    ids = tok.Encode(prompt->get<std::string>(), {.add_special_tokens = add_special});
  }
  if (!ids.ok()) return SendError(res, FromStatus(ids.status()));
  SendJson(res, {{"count", ids->size()},
                 {"max_model_len", engine_->model_config().max_position_embeddings},
                 {"tokens", *ids}});
}

void Server::HandleDetokenize(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (!ParseBody(req, res, &body)) return;
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) {
    return SendError(res, BadRequest("'tokens' must be a list of token ids", "tokens"));
  }
  std::vector<int32_t> ids;
  for (const auto& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() >= engine_->tokenizer().vocab_size()) {
      return SendError(
          res, BadRequest("'tokens' holds " + t.dump() + ", not a token id of this vocabulary",
                          "tokens"));
    }
    ids.push_back(t.get<int32_t>());
  }
  auto text = engine_->tokenizer().Decode(ids);
  if (!text.ok()) return SendError(res, FromStatus(text.status()));
  SendJson(res, {{"prompt", *text}});
}

void Server::HandleLoadLora(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (!ParseBody(req, res, &body)) return;
  auto name = body.find("lora_name");
  auto path = body.find("lora_path");
  if (name == body.end() || !name->is_string() || name->get<std::string>().empty()) {
    return SendError(res, BadRequest("'lora_name' (a non-empty string) is required", "lora_name"));
  }
  if (path == body.end() || !path->is_string()) {
    return SendError(res, BadRequest("'lora_path' (a string) is required", "lora_path"));
  }
  const std::string n = name->get<std::string>();
  if (n == served_name_) {
    return SendError(res, BadRequest("'" + n + "' is the base model's name", "lora_name"));
  }
  Status s = engine_->LoadAdapter(n, path->get<std::string>());
  if (!s.ok()) {
    ApiError e = FromStatus(s);
    if (s.code() == StatusCode::kNotFound) {
      e.status = 404;
      e.param = "lora_path";
    }
    return SendError(res, e);
  }
  res.status = 200;
  res.set_content("Success: LoRA adapter '" + n + "' added successfully.", "text/plain");
}

void Server::HandleUnloadLora(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (!ParseBody(req, res, &body)) return;
  auto name = body.find("lora_name");
  if (name == body.end() || !name->is_string()) {
    return SendError(res, BadRequest("'lora_name' (a string) is required", "lora_name"));
  }
  const std::string n = name->get<std::string>();
  if (Status s = engine_->UnloadAdapter(n); !s.ok()) {
    ApiError e = FromStatus(s);
    e.param = "lora_name";
    return SendError(res, e);
  }
  res.status = 200;
  res.set_content("Success: LoRA adapter '" + n + "' removed successfully.", "text/plain");
}

}  // namespace allot::llm::serve
