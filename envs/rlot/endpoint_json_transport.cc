#include "envs/rlot/endpoint_json_transport.h"

#include <future>

namespace allot::envs::rlot {

rewards::JsonTransport EndpointJsonTransport(std::shared_ptr<llm::HttpTransport> http,
                                             llm::EndpointConfig endpoint, double timeout_s) {
  std::string base = endpoint.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0)
    base.resize(base.size() - 3);
  return [http, endpoint, base, timeout_s](const std::string& path,
                                           const nlohmann::json& body) -> Result<nlohmann::json> {
    llm::HttpRequest req;
    req.method = llm::HttpRequest::Method::kPost;
    req.url = base + path;
    req.headers.push_back("Content-Type: application/json");
    if (!endpoint.api_key.empty())
      req.headers.push_back("Authorization: Bearer " + endpoint.api_key);
    req.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    req.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    req.ca_file = endpoint.ca_file;
    auto promise = std::make_shared<std::promise<llm::HttpResponse>>();
    auto future = promise->get_future();
    http->Send(std::move(req),
               [promise](llm::HttpResponse&& r) { promise->set_value(std::move(r)); });
    llm::HttpResponse r = future.get();
    const std::string url = base + path;
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
  };
}

}  // namespace allot::envs::rlot
