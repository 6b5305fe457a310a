#include "core/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <set>
#include <vector>

namespace allot {
namespace {

std::mutex& SecretsMutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& Secrets() {
  static std::set<std::string> s;
  return s;
}

// Redacts the payload, then forwards to the wrapped sinks.
class RedactingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void Add(std::shared_ptr<spdlog::sinks::sink> sink) {
    std::lock_guard<std::mutex> lock(mutex_);
    sinks_.push_back(std::move(sink));
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text = Redact(std::string(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy(msg.time, msg.source, msg.logger_name, msg.level, text);
    for (auto& s : sinks_) {
      if (s->should_log(copy.level)) s->log(copy);
    }
  }
  void flush_() override {
    for (auto& s : sinks_) s->flush();
  }

 private:
  std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks_;
};

std::shared_ptr<RedactingSink>& Root() {
  static std::shared_ptr<RedactingSink> root;
  return root;
}

}  // namespace

void RegisterSecret(const std::string& secret) {
  if (secret.size() < 4) return;
  std::lock_guard<std::mutex> lock(SecretsMutex());
  Secrets().insert(secret);
}

std::string Redact(std::string text) {
  std::lock_guard<std::mutex> lock(SecretsMutex());
  for (const auto& s : Secrets()) {
    for (size_t pos = text.find(s); pos != std::string::npos; pos = text.find(s, pos)) {
      text.replace(pos, s.size(), "<redacted>");
      pos += 10;
    }
  }
  return text;
}

Status SetupLogging(const std::string& level, const std::string& log_file) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return InvalidArgument("logging.level: unknown level '" + level +
                           "' (trace, debug, info, warn, error, off)");
  }
  auto root = std::make_shared<RedactingSink>();
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern("%^[%H:%M:%S %L]%$ %v");
  root->Add(console);
  Root() = root;
  auto logger = std::make_shared<spdlog::logger>("allot", root);
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  if (!log_file.empty()) return AddLogFile(log_file);
  return Status::Ok();
}

Status AddLogFile(const std::string& log_file) {
  if (!Root()) ALLOT_RETURN_IF_ERROR(SetupLogging("info"));
  try {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file, false);
    file->set_pattern("[%Y-%m-%d %H:%M:%S.%e %l] %v");
    Root()->Add(file);
  } catch (const spdlog::spdlog_ex& e) {
    return Internal("open log file " + log_file + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace allot
