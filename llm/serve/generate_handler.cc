// POST /v1/completions and /v1/chat/completions: request -> engine job -> JSON or SSE.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "llm/serve/api_request.h"
#include "llm/serve/api_response.h"
#include "llm/serve/server.h"

namespace allot::llm::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string NewId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s-%08llx%08llx", prefix,
                static_cast<unsigned long long>(salt & 0xffffffffu),
                static_cast<unsigned long long>(++counter));
  return buf;
}

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.Body(), "application/json");
}

// An SSE stream written by the scheduler thread and drained by the HTTP thread.
struct SseChannel {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> events;
  bool finished = false;

  void Push(const json& j) {
    {
      std::lock_guard lock(mu);
      events.push_back("data: " + Dump(j) + "\n\n");
    }
    cv.notify_all();
  }
  void Close() {
    {
      std::lock_guard lock(mu);
      events.push_back("data: [DONE]\n\n");
      finished = true;
    }
    cv.notify_all();
  }
};

// What a streamed choice has sent so far.
struct StreamedChoice {
  StreamDetokenizer detok;
  models::GeneratedSequence partial;  // tokens and logprobs sent
  size_t text_offset = 0;
};

}  // namespace

void Server::HandleGenerate(const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point arrived = Clock::now();
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return SendError(res, BadRequest("the request body is not valid JSON"));
  auto g = std::make_shared<GenerateRequest>();
  ApiError err;
  if (!ParseGenerateRequest(body, chat, config_.default_max_tokens, g.get(), &err)) {
    return SendError(res, err);
  }
  if (g->echo) return SendError(res, BadRequest("'echo' is not supported", "echo"));

  std::string adapter;
  if (!g->model.empty() && g->model != served_name_) {
    if (!engine_->HasAdapter(g->model)) {
      ApiError e;
      e.status = 404;
      e.type = "not_found_error";
      e.param = "model";
      e.code = "model_not_found";
      e.message = "The model `" + g->model + "` does not exist.";
      return SendError(res, e);
    }
    adapter = g->model;
  }

  const auto& tok = engine_->tokenizer();
  const auto& mc = engine_->model_config();
  std::vector<std::vector<int32_t>> prompts;
  if (chat) {
    models::ChatRenderOptions ro;
    ro.add_generation_prompt = g->add_generation_prompt;
    ro.default_system = config_.chat_template.default_system;
    ro.enable_thinking = config_.chat_template.enable_thinking;
    auto ids = tok.Encode(models::RenderChat(chat_template_, g->messages, ro),
                          {.parse_special = true, .add_special_tokens = false});
    if (!ids.ok()) return SendError(res, BadRequest(ids.status().message(), "messages"));
    prompts.push_back(std::move(*ids));
  } else {
    for (const auto& p : g->prompts) {
      if (!p.is_ids) {
        auto ids = tok.Encode(p.text);
        if (!ids.ok()) return SendError(res, BadRequest(ids.status().message(), "prompt"));
        prompts.push_back(std::move(*ids));
      } else {
        prompts.push_back(p.ids);
      }
    }
  }
  if (chat && !g->max_tokens_set) {
    g->params.max_tokens =
        std::max<int64_t>(1, mc.max_position_embeddings - static_cast<int64_t>(prompts[0].size()));
  }
  int64_t prompt_tokens = 0;
  for (const auto& p : prompts) {
    const std::string param = chat ? "messages" : "prompt";
    if (p.empty()) return SendError(res, BadRequest("the prompt is empty", param));
    for (int32_t id : p) {
      if (id >= mc.vocab_size) {
        return SendError(res, BadRequest("prompt token id " + std::to_string(id) +
                                             " is outside the vocabulary [0, " +
                                             std::to_string(mc.vocab_size) + ")",
                                         param));
      }
    }
    const int64_t total = static_cast<int64_t>(p.size()) + g->params.max_tokens;
    if (total > mc.max_position_embeddings) {
      ApiError e = BadRequest(
          "This model's maximum context length is " + std::to_string(mc.max_position_embeddings) +
              " tokens. However, you requested " + std::to_string(total) + " tokens (" +
              std::to_string(p.size()) + " in the prompt, " + std::to_string(g->params.max_tokens) +
              " for the completion). Please reduce the prompt or max_tokens.",
          param);
      e.code = "context_length_exceeded";
      return SendError(res, e);
    }
    prompt_tokens += static_cast<int64_t>(p.size());
  }

  const std::string id = NewId(chat ? "chatcmpl" : "cmpl");
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const std::string model_name = adapter.empty() ? served_name_ : adapter;
  const int64_t n = g->params.n;
  auto first_token = std::make_shared<std::atomic<bool>>(false);
  ServeMetrics* metrics = &metrics_;

  EngineJob job;
  job.adapter = adapter;
  job.top_logprobs = g->stream ? 0 : std::max(g->logprobs, 0);
  job.prompt_logprobs = g->prompt_logprobs;
  for (auto& p : prompts) job.requests.push_back({std::move(p), g->params, nullptr});

  auto base_chunk = [=](json choices) {
    return json{{"id", id},
                {"object", chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", model_name},
                {"choices", std::move(choices)}};
  };
  auto usage = [](int64_t prompt, int64_t completion) {
    return json{{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
  };

  if (!g->stream) {
    for (auto& r : job.requests) {
      r.on_token = [first_token, metrics, arrived](size_t, const models::SampledToken&, bool) {
        if (!first_token->exchange(true)) {
          metrics->ObserveTimeToFirstToken(
              std::chrono::duration<double>(Clock::now() - arrived).count());
        }
      };
    }
    std::vector<std::vector<int32_t>> prompt_ids;
    for (const auto& r : job.requests) prompt_ids.push_back(r.prompt);
    auto out = engine_->Run(std::move(job));
    if (!out.ok()) return SendError(res, FromStatus(out.status()));
    metrics_.ObserveLatency(std::chrono::duration<double>(Clock::now() - arrived).count());
    json choices = json::array();
    int64_t completion_tokens = 0;
    for (size_t p = 0; p < out->results.size(); ++p) {
      for (size_t s = 0; s < out->results[p].samples.size(); ++s) {
        const auto& seq = out->results[p].samples[s];
        completion_tokens += static_cast<int64_t>(seq.token_ids.size());
        const std::vector<std::vector<TopToken>>* top =
            g->logprobs > 0 && p < out->top.size() ? &out->top[p][s] : nullptr;
        json c = {{"index", static_cast<int64_t>(p) * n + static_cast<int64_t>(s)},
                  {"finish_reason", seq.finish_reason},
                  {"stop_reason", StopReason(seq, g->params)}};
        json lp;
        if (g->logprobs >= 0) {
          lp = chat ? ChatLogprobs(tok, seq, 0, seq.token_ids.size(), top,
                                   g->return_tokens_as_token_ids)
                    : CompletionLogprobs(tok, seq, 0, seq.token_ids.size(), top,
                                         g->return_tokens_as_token_ids, 0);
        }
        c["logprobs"] = lp;
        if (chat) {
          c["message"] = {{"role", "assistant"}, {"content", seq.text}};
        } else {
          c["text"] = seq.text;
        }
        if (g->return_token_ids) {
          c["token_ids"] = seq.token_ids;
          if (!chat) c["prompt_token_ids"] = prompt_ids[p];
        }
        if (g->prompt_logprobs >= 0 && p < out->prompt.size()) {
          c["prompt_logprobs"] =
              PromptLogprobsJson(tok, out->prompt[p], g->return_tokens_as_token_ids);
        }
        choices.push_back(std::move(c));
      }
    }
    metrics_.AddTokens(prompt_tokens, completion_tokens);
    json resp = base_chunk(std::move(choices));
    resp["object"] = chat ? "chat.completion" : "text_completion";
    // The adapter that decoded, as the engine installed it (not the request's echo).
    resp["model"] = out->adapter.empty() ? served_name_ : out->adapter;
    resp["usage"] = usage(prompt_tokens, completion_tokens);
    if (g->return_token_ids && chat) resp["prompt_token_ids"] = prompt_ids[0];
    // The sha256 of the adapter file the engine had installed (server.h), or null for the base
    // model; the same in the x-allot-adapter-sha256 header, which is absent for the base model.
    resp["adapter_sha256"] = out->adapter_sha256.empty() ? json() : json(out->adapter_sha256);
    if (!out->adapter_sha256.empty()) res.set_header(kAdapterSha256Header, out->adapter_sha256);
    res.status = 200;
    res.set_content(Dump(resp), "application/json");
    return;
  }

  // Streaming: one chunk per sampled token, then each choice's last chunk with its
  // finish_reason, an optional usage chunk, and [DONE].
  auto channel = std::make_shared<SseChannel>();
  size_t longest_stop = 0;
  for (const auto& s : g->params.stop) longest_stop = std::max(longest_stop, s.size());
  const size_t hold = longest_stop > 0 ? longest_stop - 1 : 0;
  auto choices = std::make_shared<std::vector<StreamedChoice>>();
  for (size_t i = 0; i < job.requests.size() * static_cast<size_t>(n); ++i) {
    choices->push_back({StreamDetokenizer(&tok, hold), {}, 0});
  }
  const models::Tokenizer* tp = &tok;
  auto choice_json = [=](size_t index, const std::string& text,
                         const models::GeneratedSequence& seq, size_t from, size_t to,
                         size_t offset) {
    json c = {{"index", index}, {"finish_reason", nullptr}};
    if (chat) {
      c["delta"] = {{"content", text}};
    } else {
      c["text"] = text;
    }
    json lp;
    if (g->logprobs >= 0) {
      lp = chat ? ChatLogprobs(*tp, seq, from, to, nullptr, g->return_tokens_as_token_ids)
                : CompletionLogprobs(*tp, seq, from, to, nullptr, g->return_tokens_as_token_ids,
                                     offset);
    }
    c["logprobs"] = lp;
    if (g->return_token_ids) {
      c["token_ids"] = std::vector<int32_t>(seq.token_ids.begin() + static_cast<long>(from),
                                            seq.token_ids.begin() + static_cast<long>(to));
    }
    return c;
  };
  for (size_t r = 0; r < job.requests.size(); ++r) {
    job.requests[r].on_token = [=](size_t sample, const models::SampledToken& t, bool finished) {
      if (!first_token->exchange(true)) {
        metrics->ObserveTimeToFirstToken(
            std::chrono::duration<double>(Clock::now() - arrived).count());
      }
      if (finished) return;  // the last token goes out with the finish_reason
      const size_t index = r * static_cast<size_t>(n) + sample;
      StreamedChoice& sc = (*choices)[index];
      sc.partial.token_ids.push_back(t.token);
      sc.partial.logprobs.push_back(t.logprob);
      const size_t i = sc.partial.token_ids.size() - 1;
      const std::string delta = sc.detok.Push(t.token);
      channel->Push(base_chunk(
          json::array({choice_json(index, delta, sc.partial, i, i + 1, sc.text_offset)})));
      sc.text_offset += delta.size();
    };
  }
  const std::vector<int32_t> chat_prompt = job.requests[0].prompt;
  job.done = [=](Result<EngineOutput> out) {
    if (!out.ok()) {
      json e = json::parse(FromStatus(out.status()).Body());
      channel->Push(e);
      channel->Close();
      return;
    }
    int64_t completion_tokens = 0;
    for (size_t p = 0; p < out->results.size(); ++p) {
      for (size_t s = 0; s < out->results[p].samples.size(); ++s) {
        const auto& seq = out->results[p].samples[s];
        completion_tokens += static_cast<int64_t>(seq.token_ids.size());
        const size_t index = p * static_cast<size_t>(n) + s;
        StreamedChoice& sc = (*choices)[index];
        const std::string rest = sc.detok.Finish(seq.text);
        json c = choice_json(index, rest, seq, sc.partial.token_ids.size(), seq.token_ids.size(),
                             sc.text_offset);
        c["finish_reason"] = seq.finish_reason;
        c["stop_reason"] = StopReason(seq, g->params);
        channel->Push(base_chunk(json::array({c})));
      }
    }
    metrics->AddTokens(prompt_tokens, completion_tokens);
    metrics->ObserveLatency(std::chrono::duration<double>(Clock::now() - arrived).count());
    if (g->include_usage) {
      json u = base_chunk(json::array());
      u["usage"] = usage(prompt_tokens, completion_tokens);
      channel->Push(u);
    }
    channel->Close();
  };
  // The role comes first in a chat stream, as OpenAI sends it.
  if (chat) {
    json first = json::array();
    for (size_t i = 0; i < choices->size(); ++i) {
      first.push_back({{"index", i},
                       {"delta", {{"role", "assistant"}, {"content", ""}}},
                       {"logprobs", nullptr},
                       {"finish_reason", nullptr}});
    }
    json c = base_chunk(std::move(first));
    if (g->return_token_ids) c["prompt_token_ids"] = chat_prompt;
    channel->Push(c);
  }
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  job.cancelled = cancelled;
  if (Status s = engine_->Submit(std::move(job)); !s.ok()) return SendError(res, FromStatus(s));
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [channel, cancelled](size_t, httplib::DataSink& sink) {
        std::unique_lock lock(channel->mu);
        channel->cv.wait(lock, [&] { return !channel->events.empty() || channel->finished; });
        while (!channel->events.empty()) {
          std::string e = std::move(channel->events.front());
          channel->events.pop_front();
          lock.unlock();
          if (!sink.write(e.data(), e.size())) {
            cancelled->store(true);  // the client hung up: stop decoding for it
            return false;
          }
          lock.lock();
        }
        if (channel->finished) {
          lock.unlock();
          sink.done();
        }
        return true;
      });
}

}  // namespace allot::llm::serve
