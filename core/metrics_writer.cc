#include "core/metrics_writer.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

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

}  // namespace allot
