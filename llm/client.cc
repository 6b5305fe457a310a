#include "llm/client.h"

#include <chrono>
#include <future>
#include <mutex>

#include <nlohmann/json.hpp>

#include "llm/client_internal.h"
#include "llm/openai_json.h"

namespace allot::llm {

using client_internal::Clock;
using client_internal::Ms;

Result<std::unique_ptr<Client>> Client::Create(std::vector<EndpointConfig> endpoints,
                                               const ClientOptions& options) {
  std::unique_ptr<Client> c(new Client());
  c->options_ = options;
  for (auto& e : endpoints) {
    ALLOT_RETURN_IF_ERROR(ResolveApiKey(e));
    ALLOT_RETURN_IF_ERROR(e.Validate());
    if (c->Find(e.name) != nullptr) {
      return InvalidArgument("endpoints: duplicate endpoint name '" + e.name + "'");
    }
    c->endpoints_.push_back(std::make_unique<Endpoint>(std::move(e)));
  }
  HttpTransport::Options topt;
  topt.threads = options.threads;
  ALLOT_ASSIGN_OR_RETURN(c->transport_, HttpTransport::Create(topt));
  return c;
}

Client::~Client() {
  if (transport_) transport_->Shutdown();
}

Client::Endpoint* Client::Find(std::string_view name) const {
  for (const auto& e : endpoints_) {
    if (e->cfg.name == name) return e.get();
  }
  return nullptr;
}

const EndpointConfig* Client::endpoint(std::string_view name) const {
  Endpoint* e = Find(name);
  return e != nullptr ? &e->cfg : nullptr;
}

std::vector<std::string> Client::endpoint_names() const {
  std::vector<std::string> names;
  for (const auto& e : endpoints_) names.push_back(e->cfg.name);
  return names;
}

EndpointStats Client::stats(std::string_view name) const {
  EndpointStats s;
  Endpoint* e = Find(name);
  if (e == nullptr) return s;
  std::lock_guard<std::mutex> lock(e->mu);
  s.in_flight = e->in_flight;
  s.queued = static_cast<int>(e->waiting.size());
  s.breaker_open = e->breaker.is_open();
  s.breaker_opened = e->breaker.times_opened();
  return s;
}

Status Client::NotConfigured(std::string_view name) const {
  std::string known;
  for (const auto& e : endpoints_) known += (known.empty() ? "" : ", ") + e->cfg.name;
  return NotFound("llm endpoint '" + std::string(name) +
                  "' is not configured (known: " + (known.empty() ? "none" : known) + ")");
}

// --- Completions ------------------------------------------------------------------------------

namespace {

// Accumulates a streamed completion and forwards each chunk.
struct StreamState {
  SseParser parser;
  Completion completion;
  Status error;
  bool saw_done = false;
  bool started = false;
  bool has_usage = false;
  std::function<void(const StreamChunk&)> on_chunk;
};

void Accumulate(Completion& c, const StreamChunk& chunk) {
  if (chunk.index < 0 || chunk.index > 4096) return;
  if (static_cast<size_t>(chunk.index) >= c.choices.size()) c.choices.resize(chunk.index + 1);
  Choice& ch = c.choices[chunk.index];
  ch.index = chunk.index;
  ch.text += chunk.text;
  ch.token_ids.insert(ch.token_ids.end(), chunk.token_ids.begin(), chunk.token_ids.end());
  ch.logprobs.insert(ch.logprobs.end(), chunk.logprobs.begin(), chunk.logprobs.end());
  if (!chunk.finish_reason.empty()) ch.finish_reason = chunk.finish_reason;
}

void FillUsageFallback(Completion& c) {
  // Servers that omit usage: count what the response itself shows.
  if (c.usage.completion_tokens == 0) {
    for (const auto& ch : c.choices) {
      c.usage.completion_tokens +=
          static_cast<int64_t>(!ch.token_ids.empty() ? ch.token_ids.size() : ch.logprobs.size());
    }
  }
  if (c.usage.prompt_tokens == 0) {
    c.usage.prompt_tokens =
        static_cast<int64_t>(!c.prompt_token_ids.empty()
                                 ? c.prompt_token_ids.size()
                                 : (c.choices.empty() ? 0 : c.choices[0].prompt_token_ids.size()));
  }
}

}  // namespace

void Client::RunCompletion(Endpoint* ep, const char* path, std::string body, bool chat,
                           Callback<Completion> done, const CallOptions& options) {
  auto st = std::make_shared<CallState>();
  st->ep = ep;
  st->post = true;
  st->url = ep->base + path;
  st->where = "llm endpoint '" + ep->cfg.name + "' (POST " + st->url + ")";
  st->body = std::move(body);
  st->start = Clock::now();
  st->deadline =
      st->start + Ms(options.deadline_s > 0 ? options.deadline_s : ep->cfg.limits.deadline_s);
  std::shared_ptr<StreamState> stream;
  if (options.on_chunk) {
    stream = std::make_shared<StreamState>();
    stream->on_chunk = options.on_chunk;
    stream->parser.max_event_bytes = static_cast<size_t>(ep->cfg.limits.max_response_bytes);
    st->stream = true;
    const std::string* where = &st->where;
    st->on_data = [stream, chat, where](std::string_view bytes) {
      return stream->parser.Feed(bytes, [&](std::string_view data) {
        if (data == "[DONE]") {
          stream->saw_done = true;
          return true;
        }
        std::vector<StreamChunk> chunks;
        Status s = ParseStreamChunk(data, chat, *where, &chunks, &stream->completion.usage,
                                    &stream->has_usage);
        if (!s.ok()) {
          stream->error = std::move(s);
          return false;
        }
        for (const auto& chunk : chunks) {
          stream->started = true;
          Accumulate(stream->completion, chunk);
          stream->on_chunk(chunk);
        }
        return true;
      });
    };
    st->may_retry = [stream] { return !stream->started; };
  }
  const GpuProfile gpu = options_.gpu;
  st->done = [this, ep, chat, stream, gpu, done = std::move(done), where = st->where](
                 Status s, HttpResponse&& r, int attempts, double latency) {
    Result<Completion> result = Internal("unset");
    if (stream && !stream->error.ok()) {
      result = stream->error;
    } else if (stream && stream->parser.overflowed()) {
      result = ResourceExhausted(where + ": a stream event exceeds the response size limit");
    } else if (!s.ok()) {
      result = std::move(s);
    } else if (stream) {
      if (!stream->saw_done) {
        result = DataLoss(where + ": stream ended before data: [DONE] (truncated)");
      } else if (stream->completion.choices.empty()) {
        result = DataLoss(where + ": stream carried no choices");
      } else {
        result = std::move(stream->completion);
      }
    } else {
      result = ParseCompletion(r.body, chat, where);
    }
    CallRecord rec;
    rec.endpoint = ep->cfg.name;
    rec.ok = result.ok();
    rec.attempts = attempts;
    rec.latency_s = latency;
    if (result.ok()) {
      FillUsageFallback(*result);
      rec.prompt_tokens = result->usage.prompt_tokens;
      rec.completion_tokens = result->usage.completion_tokens;
      PriceCall(ep->cfg, gpu, rec);
      result->record = rec;
    }
    ledger_.Add(rec);
    done(std::move(result));
  };
  Admit(std::move(st));
}

void Client::Complete(std::string_view endpoint, const CompletionRequest& request,
                      Callback<Completion> done, const CallOptions& options) {
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    done(NotConfigured(endpoint));
    return;
  }
  RunCompletion(
      ep, "/v1/completions",
      EncodeCompletionRequest(request, ep->cfg.model, static_cast<bool>(options.on_chunk)), false,
      std::move(done), options);
}

void Client::Chat(std::string_view endpoint, const ChatRequest& request, Callback<Completion> done,
                  const CallOptions& options) {
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    done(NotConfigured(endpoint));
    return;
  }
  RunCompletion(ep, "/v1/chat/completions",
                EncodeChatRequest(request, ep->cfg.model, static_cast<bool>(options.on_chunk)),
                true, std::move(done), options);
}

namespace {
template <typename T>
std::pair<Callback<T>, std::future<Result<T>>> MakePromise() {
  auto p = std::make_shared<std::promise<Result<T>>>();
  auto f = p->get_future();
  return {[p](Result<T> r) { p->set_value(std::move(r)); }, std::move(f)};
}
}  // namespace

std::future<Result<Completion>> Client::Complete(std::string_view endpoint,
                                                 const CompletionRequest& request,
                                                 const CallOptions& options) {
  auto [cb, f] = MakePromise<Completion>();
  Complete(endpoint, request, std::move(cb), options);
  return std::move(f);
}

std::future<Result<Completion>> Client::Chat(std::string_view endpoint, const ChatRequest& request,
                                             const CallOptions& options) {
  auto [cb, f] = MakePromise<Completion>();
  Chat(endpoint, request, std::move(cb), options);
  return std::move(f);
}

// --- Management endpoints ---------------------------------------------------------------------

void Client::StartRaw(Endpoint* ep, bool post, const char* path, std::string body,
                      std::function<void(Status, std::string, const std::string&)> done) {
  auto st = std::make_shared<CallState>();
  st->ep = ep;
  st->post = post;
  st->url = ep->base + path;
  st->where = "llm endpoint '" + ep->cfg.name + "' (" + (post ? "POST " : "GET ") + st->url + ")";
  st->body = std::move(body);
  st->start = Clock::now();
  st->deadline = st->start + Ms(ep->cfg.limits.deadline_s);
  st->done = [this, ep, done = std::move(done), where = st->where](Status s, HttpResponse&& r,
                                                                   int attempts, double latency) {
    CallRecord rec;
    rec.endpoint = ep->cfg.name;
    rec.ok = s.ok();
    rec.attempts = attempts;
    rec.latency_s = latency;
    ledger_.Add(rec);
    done(std::move(s), std::move(r.body), where);
  };
  Admit(std::move(st));
}

std::future<Result<std::vector<ModelInfo>>> Client::Models(std::string_view endpoint) {
  auto [cb, f] = MakePromise<std::vector<ModelInfo>>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  StartRaw(ep, false, "/v1/models", "",
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseModels(body, where));
           });
  return std::move(f);
}

namespace {
std::pair<std::function<void(Status)>, std::future<Status>> MakeStatusPromise() {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  return {[p](Status s) { p->set_value(std::move(s)); }, std::move(f)};
}
}  // namespace

std::future<Status> Client::Health(std::string_view endpoint) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  StartRaw(ep, false, "/health", "",
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

std::future<Result<std::vector<int64_t>>> Client::Tokenize(std::string_view endpoint,
                                                           const std::string& text,
                                                           bool add_special_tokens) {
  auto [cb, f] = MakePromise<std::vector<int64_t>>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {
      {"model", ep->cfg.model}, {"prompt", text}, {"add_special_tokens", add_special_tokens}};
  StartRaw(ep, true, "/tokenize", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseTokenize(body, where));
           });
  return std::move(f);
}

std::future<Result<std::string>> Client::Detokenize(std::string_view endpoint,
                                                    const std::vector<int64_t>& ids) {
  auto [cb, f] = MakePromise<std::string>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"model", ep->cfg.model}, {"tokens", ids}};
  StartRaw(ep, true, "/detokenize", j.dump(),
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseDetokenize(body, where));
           });
  return std::move(f);
}

std::future<Status> Client::LoadLoraAdapter(std::string_view endpoint, const LoraAdapter& adapter) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"lora_name", adapter.name}, {"lora_path", adapter.path}};
  if (adapter.load_inplace) j["load_inplace"] = true;
  StartRaw(ep, true, "/v1/load_lora_adapter",
           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

std::future<Status> Client::UnloadLoraAdapter(std::string_view endpoint, const std::string& name) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"lora_name", name}};
  StartRaw(ep, true, "/v1/unload_lora_adapter",
           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

}  // namespace allot::llm
