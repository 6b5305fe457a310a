#include "llm/endpoint_json_transport.h"

#include <chrono>
#include <future>

namespace allot::llm {

namespace {

Result<nlohmann::json> Post(HttpTransport& http, const EndpointConfig& endpoint,
                            const std::string& url, const nlohmann::json& body, double timeout_s) {
  HttpRequest req;
  req.method = HttpRequest::Method::kPost;
  req.url = url;
  req.headers.push_back("Content-Type: application/json");
  if (!endpoint.api_key.empty()) req.headers.push_back("Authorization: Bearer " + endpoint.api_key);
  req.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  req.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  req.ca_file = endpoint.ca_file;
  auto promise = std::make_shared<std::promise<HttpResponse>>();
  auto future = promise->get_future();
  http.Send(std::move(req), [promise](HttpResponse&& r) { promise->set_value(std::move(r)); });
  HttpResponse r = future.get();
  if (!r.status.ok()) return Unavailable(url + ": " + r.status.message());
  if (r.http_status < 200 || r.http_status >= 300) {
    std::string msg = r.body.substr(0, 500);
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_discarded() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("message") && j["error"]["message"].is_string()) {
      msg = j["error"]["message"].get<std::string>();
    }
    return Unavailable(url + ": HTTP " + std::to_string(r.http_status) + ": " + msg);
  }
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return DataLoss(url + ": the reply is not JSON");
  return j;
}

}  // namespace

JsonTransport EndpointJsonTransport(std::shared_ptr<HttpTransport> http, EndpointConfig endpoint,
                                    double timeout_s, CallRecorder record, GpuProfile gpu,
                                    std::string tokenize_path) {
  std::string base = endpoint.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0)
    base.resize(base.size() - 3);
  return [http, endpoint, base, timeout_s, record, gpu, tokenize_path](
             const std::string& path, const nlohmann::json& body) -> Result<nlohmann::json> {
    const auto start = std::chrono::steady_clock::now();
    Result<nlohmann::json> reply = Post(*http, endpoint, base + path, body, timeout_s);
    if (!record || path == tokenize_path) return reply;
    CallRecord call;
    call.endpoint = endpoint.name;
    call.ok = reply.ok();
    call.attempts = 1;
    call.latency_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (reply.ok() && reply->is_object() && reply->contains("usage") &&
        (*reply)["usage"].is_object()) {
      const nlohmann::json& u = (*reply)["usage"];
      call.prompt_tokens = u.value("prompt_tokens", int64_t{0});
      call.completion_tokens = u.value("completion_tokens", int64_t{0});
    }
    PriceCall(endpoint, gpu, call);
    record(call);
    return reply;
  };
}

}  // namespace allot::llm
