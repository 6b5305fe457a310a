#include "core/metrics_writer.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"

namespace allot {

Result<std::unique_ptr<MetricsWriter>> MetricsWriter::Open(const std::string& jsonl_path,
                                                           const std::string& tensorboard_dir) {
  std::unique_ptr<MetricsWriter> w(new MetricsWriter());
  w->path_ = jsonl_path;
  w->jsonl_ = std::fopen(jsonl_path.c_str(), "ab");
  if (w->jsonl_ == nullptr) return Internal("open " + jsonl_path + ": " + std::strerror(errno));
  if (!tensorboard_dir.empty()) {
    ALLOT_ASSIGN_OR_RETURN(w->tb_, TensorBoardWriter::Create(tensorboard_dir));
  }
  return w;
}

MetricsWriter::~MetricsWriter() {
  if (jsonl_ != nullptr) std::fclose(jsonl_);
}

Status MetricsWriter::Log(int64_t step, const Scalars& values) {
  nlohmann::ordered_json line;
  line["step"] = step;
  line["time"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& [k, v] : values) {
    if (std::isfinite(v)) {
      line[k] = v;
      if (tb_) ALLOT_RETURN_IF_ERROR(tb_->AddScalar(k, v, step));
    } else {
      line[k] = nullptr;
    }
  }
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), jsonl_) != text.size() ||
      std::fflush(jsonl_) != 0) {
    return Internal("write " + path_ + ": " + std::strerror(errno));
  }
  if (tb_) ALLOT_RETURN_IF_ERROR(tb_->Flush());
  return Status::Ok();
}

Status TruncateMetricsAfter(const std::string& jsonl_path, const std::string& tensorboard_dir,
                            int64_t step) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(jsonl_path, ec)) {
    std::string text;
    ALLOT_RETURN_IF_ERROR(ReadFile(jsonl_path, &text));
    std::string kept;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // no newline: torn by the interrupted process
      const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
          j["step"].get<int64_t>() > step) {
        continue;
      }
      kept += line + "\n";
    }
    if (kept.size() != text.size()) ALLOT_RETURN_IF_ERROR(WriteFileAtomic(jsonl_path, kept));
  }
  if (tensorboard_dir.empty() || !fs::is_directory(tensorboard_dir, ec)) return Status::Ok();
  for (const auto& e : fs::directory_iterator(tensorboard_dir, ec)) {
    if (!e.is_regular_file() ||
        e.path().filename().string().rfind("events.out.tfevents.", 0) != 0) {
      continue;
    }
    ALLOT_RETURN_IF_ERROR(TruncateTensorBoardEventsAfter(e.path().string(), step));
  }
  if (ec) return Internal("list " + tensorboard_dir + ": " + ec.message());
  return Status::Ok();
}

}  // namespace allot
