#include "core/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/tensorboard.pb.h"

namespace allot {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("create " + dir + ": " + ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter());
  // <time>.<host>.<pid>, and a counter where that file exists: a resumed run that starts within
  // the second of the run it resumes must not append to that run's file.
  const std::string base =
      (std::filesystem::path(dir) /
       ("events.out.tfevents." + std::to_string(static_cast<int64_t>(NowSeconds())) + "." + host +
        "." + std::to_string(::getpid())))
          .string();
  w->path_ = base;
  for (int k = 1; std::filesystem::exists(w->path_, ec); ++k) {
    w->path_ = base + "." + std::to_string(k);
  }
  w->file_ = std::fopen(w->path_.c_str(), "ab");
  if (w->file_ == nullptr) return Internal("open " + w->path_ + ": " + std::strerror(errno));
  tensorboard::Event ev;
  ev.set_wall_time(NowSeconds());
  ev.set_file_version("brain.Event:2");
  ALLOT_RETURN_IF_ERROR(w->WriteRecord(ev.SerializeAsString()));
  ALLOT_RETURN_IF_ERROR(w->Flush());
  return w;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TensorBoardWriter::WriteRecord(const std::string& payload) {
  std::string header;
  PutLe(header, payload.size(), 8);
  std::string record = header;
  PutLe(record, MaskCrc(Crc32c(header)), 4);
  record += payload;
  PutLe(record, MaskCrc(Crc32c(payload)), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    return Internal("write " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status TensorBoardWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event ev;
  ev.set_wall_time(NowSeconds());
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return WriteRecord(ev.SerializeAsString());
}

Status TensorBoardWriter::Flush() {
  if (std::fflush(file_) != 0) return Internal("flush " + path_ + ": " + std::strerror(errno));
  return Status::Ok();
}

namespace {

// The record at byte `pos` of `data`: its event and its size, or why it is not one.
Status ParseRecord(const std::string& data, size_t pos, const std::string& path,
                   tensorboard::Event* ev, size_t* size) {
  const std::string at = path + ": record at byte " + std::to_string(pos);
  if (data.size() - pos < 12) return DataLoss(at + ": truncated length");
  const uint64_t len = GetLe(data.data() + pos, 8);
  const uint32_t len_crc = static_cast<uint32_t>(GetLe(data.data() + pos + 8, 4));
  if (MaskCrc(Crc32c(data.data() + pos, 8)) != len_crc) return DataLoss(at + ": length CRC");
  if (len > data.size() - pos - 12 || data.size() - pos - 12 - len < 4) {
    return DataLoss(at + ": truncated payload");
  }
  const char* payload = data.data() + pos + 12;
  const uint32_t crc = static_cast<uint32_t>(GetLe(payload + len, 4));
  if (MaskCrc(Crc32c(payload, len)) != crc) return DataLoss(at + ": payload CRC mismatch");
  if (!ev->ParseFromArray(payload, static_cast<int>(len))) {
    return DataLoss(at + ": not an Event protobuf");
  }
  *size = 12 + len + 4;
  return Status::Ok();
}

}  // namespace

Status TruncateTensorBoardEventsAfter(const std::string& path, int64_t step) {
  std::string data;
  ALLOT_RETURN_IF_ERROR(ReadFile(path, &data));
  std::string kept;
  size_t pos = 0;
  while (pos < data.size()) {
    tensorboard::Event ev;
    size_t size = 0;
    if (!ParseRecord(data, pos, path, &ev, &size).ok()) break;
    if (ev.step() <= step) kept.append(data, pos, size);
    pos += size;
  }
  if (kept.size() == data.size()) return Status::Ok();
  return WriteFileAtomic(path, kept);
}

Result<std::vector<TensorBoardEvent>> ReadTensorBoardEvents(const std::string& path) {
  std::string data;
  ALLOT_RETURN_IF_ERROR(ReadFile(path, &data));
  std::vector<TensorBoardEvent> events;
  size_t pos = 0;
  while (pos < data.size()) {
    tensorboard::Event ev;
    size_t size = 0;
    ALLOT_RETURN_IF_ERROR(ParseRecord(data, pos, path, &ev, &size));
    TensorBoardEvent out;
    out.wall_time = ev.wall_time();
    out.step = ev.step();
    out.file_version = ev.file_version();
    for (const auto& v : ev.summary().value()) out.scalars.emplace_back(v.tag(), v.simple_value());
    events.push_back(std::move(out));
    pos += size;
  }
  return events;
}

}  // namespace allot
